"""What a batch holds and how it gets there: upstream's transforms on each frame (the targets and
their geometry), the wire format that carries them beside the pixels, and the assembly. What the
batch is, key by key, is :mod:`..batch_schema`."""
