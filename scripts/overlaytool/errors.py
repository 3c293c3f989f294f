"""The error every overlaytool command reports as one message (re-exported by the package)."""


class OverlayError(Exception):
    """A user-facing failure: the message says what is wrong and how to get out."""
