"""bgl.cache (see ARCHITECTURE.md)."""
