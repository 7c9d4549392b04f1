"""bgl.launch (see docs/ARCHITECTURE.md)."""
