"""The loader's settings: a StreamPETR config read once into a checked :class:`.settings.LoaderConfig`,
the training mode it selects, and the checks of its train and test pipelines."""
