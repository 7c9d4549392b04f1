"""bgl.partition (see ARCHITECTURE.md)."""
