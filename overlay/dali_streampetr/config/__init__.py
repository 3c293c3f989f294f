"""A StreamPETR config read once into the loader's settings (:mod:`..settings`) for a split
(:mod:`.reader`), with the split's sampling mode (:mod:`..sampling.modes`) and the check of its
transform steps (:mod:`.transform_steps`): above the wings whose parts it picks, below the loader
that calls it."""
