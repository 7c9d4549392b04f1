"""paper_word_store: the paper-word typed graph of a bag-of-words citation store."""
from __future__ import annotations

import numpy as np
import pytest

from bgl.sources.paper_word import paper_word_store
from bgl.store import GraphStore


def test_a_store_directory_is_taken_as_the_store(cora_store, tmp_path):
    """The README's ``paper_word_store(store, out)`` with a path: the same typed store as from the
    opened store (was ``AttributeError: 'str' object has no attribute 'is_typed'``)."""
    from_path = paper_word_store(str(cora_store.path), tmp_path / "a")
    from_store = paper_word_store(cora_store, tmp_path / "b")
    assert from_path.is_typed and from_path.num_nodes == from_store.num_nodes == 2708 + cora_store.feat_dim
    assert np.array_equal(np.asarray(from_path.indices), np.asarray(from_store.indices))
    assert isinstance(GraphStore(tmp_path / "a"), GraphStore)


def test_anything_else_is_refused_naming_its_type(tmp_path):
    with pytest.raises(TypeError, match="GraphStore or a store directory, got int"):
        paper_word_store(3, tmp_path / "out")
    assert not (tmp_path / "out").exists()
