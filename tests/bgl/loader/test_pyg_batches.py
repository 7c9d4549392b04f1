"""PygDataBuilder: the quick ``Data`` build is used only when it equals ``Data(**fields)``."""
from __future__ import annotations

import pytest
import torch

from bgl.pyg.batches import PygDataBuilder

Data = pytest.importorskip("torch_geometric.data").Data


def batch_fields() -> dict:
    return {"n_id": torch.arange(5), "batch_size": 2, "edge_index": torch.tensor([[2, 3], [0, 1]]),
            "num_sampled_nodes": [2, 3], "num_sampled_edges": [2], "e_id": torch.tensor([7, 9]),
            "x": torch.rand(5, 3), "y": torch.tensor([1, 0]), "edge_attr": None}


def same(a, b) -> bool:
    return type(a) is type(b) and list(a.keys()) == list(b.keys()) and all(a[k] is b[k] for k in a.keys())


def test_the_quick_build_equals_data_of_the_fields():
    build = PygDataBuilder(Data)
    fields = batch_fields()
    first = build(fields)
    assert build.quick is True and same(first, Data(**fields))
    later = build(fields)  # built the quick way now: same fields, same order, same tensors
    assert same(later, Data(**fields)) and later.num_nodes == 5 and "edge_attr" not in later


def test_a_data_class_laid_out_otherwise_keeps_pygs_own_build():
    class Renaming(Data):
        """Stores ``e_id`` under another name: what a quick build into the mapping gets wrong."""

        def __setattr__(self, key, value):
            super().__setattr__("edge_ids" if key == "e_id" else key, value)

    build = PygDataBuilder(Renaming)
    fields = batch_fields()
    build(fields)
    assert build.quick is False
    again = build(fields)
    assert type(again) is Renaming and "edge_ids" in again and "e_id" not in again
