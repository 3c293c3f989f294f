"""What a batch holds and how it gets there: the per-frame targets and their geometry, the wire format
that carries them beside the pixels, the assembly and the schema."""
