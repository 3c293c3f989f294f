"""The loader's settings: what they are and which values they may take (:mod:`.settings`), and a
StreamPETR config read once into them for a split (:mod:`.reader`), with its sampling mode and the
check of the split's transform steps (:mod:`.steps`)."""
