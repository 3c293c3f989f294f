"""The error forkwatch reports as one message (re-exported by the package)."""


class ForkwatchError(Exception):
    """Bad input (a sources file, a previous summary) or a step that could not be set up; the
    message names the file or the step."""
