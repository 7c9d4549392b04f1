"""Sub-commands of the ``bgl`` CLI, one module each (see ``bgl.cli``)."""
