"""The DALI pipeline and its guards: the graph, its external source, the worker processes, the run-ahead
watchdog, and what a failure is named."""
