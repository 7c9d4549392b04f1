"""bgl.sampler (see ARCHITECTURE.md)."""
