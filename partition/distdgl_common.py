"""What the untyped and typed DistDGL importers share (:mod:`.distdgl_import`, :mod:`.distdgl_typed`)."""
from __future__ import annotations

METHOD = "distdgl-import"
SPLIT_MASKS = {"train": ("train_mask",), "val": ("val_mask", "valid_mask"), "test": ("test_mask",)}
FEAT_CHUNK_ROWS = 1 << 20
