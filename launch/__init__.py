"""bgl.launch (see ARCHITECTURE.md)."""
