"""``bgl.loader.pipeline.kernel_warmup``: a loader built again on the same graph with the same
settings skips the construction-time warm-up run; what changes which kernels run (the graph
object, the fanouts, sampling weights) warms again."""
from __future__ import annotations

import torch

import bgl
import bgl.dgl
from bgl.loader.pipeline import kernel_warmup
from bgl.loader.stages.map import SampleStage


def _graph():
    gen = torch.Generator().manual_seed(0)
    g = bgl.dgl.graph((torch.randint(0, 300, (3000,), generator=gen), torch.randint(0, 300, (3000,), generator=gen)),
                      num_nodes=300)
    g.ndata["feat"] = torch.randn(300, 8, generator=gen)
    g.ndata["label"] = torch.randint(0, 3, (300,), generator=gen)
    g.edata["w"] = torch.rand(3000, generator=gen)
    return g


def test_a_loader_built_again_the_same_way_skips_the_warmup(monkeypatch):
    runs = []
    real = SampleStage.__call__

    def counting(self, mb):
        if mb.epoch == -1:  # the warm-up run's minibatch
            runs.append(int(mb.seeds[0]))
        return real(self, mb)

    monkeypatch.setattr(SampleStage, "__call__", counting)
    monkeypatch.setattr(kernel_warmup, "_warmed", set())
    graph = _graph()

    def build(g, **sampler_args):
        return bgl.DataLoader(g, torch.arange(50), bgl.dgl.dataloading.NeighborSampler(**sampler_args), batch_size=10)

    for _ in range(3):
        build(graph, fanouts=[3, 3])
    assert len(runs) == 1
    build(graph, fanouts=[4, 3])
    assert len(runs) == 2  # other fanouts
    build(graph, fanouts=[3, 3], prob="w")
    assert len(runs) == 3  # sampled by weight
    other = _graph()
    build(other, fanouts=[3, 3])
    assert len(runs) == 4  # another graph object
    loader = build(graph, fanouts=[3, 3])
    assert len(runs) == 4 and len(next(iter(loader))[2]) == 2  # skipped, and its batches still come


def test_the_kept_keys_are_bounded(monkeypatch):
    monkeypatch.setattr(kernel_warmup, "_warmed", set())
    monkeypatch.setattr(kernel_warmup, "MAX_KEYS", 2)
    assert [kernel_warmup.needs_warmup(("k", i)) for i in range(3)] == [True, True, True]
    assert len(kernel_warmup._warmed) <= 2
    assert kernel_warmup.needs_warmup(("k", 2)) is False
    kernel_warmup.forget(("k", 2))
    assert kernel_warmup.needs_warmup(("k", 2)) is True


def test_the_settings_walk_reads_nested_fields_to_its_depth():
    import dataclasses
    import enum

    import numpy as np

    class Mode(enum.IntEnum):
        A = 1

    @dataclasses.dataclass
    class Inner:
        weights: object = None
        mode: int = 0

    @dataclasses.dataclass
    class Stage:
        inner: Inner
        fanouts: tuple = (3, 3)

    def key(stage):
        return kernel_warmup._settings(stage, kernel_warmup._DEPTH)

    base = key(Stage(Inner()))
    assert base == ("Stage", ("inner", ("Inner", ("weights", None), ("mode", 0))), ("fanouts", (3, 3)))
    assert key(Stage(Inner(weights=np.zeros(4, np.float32)))) != key(Stage(Inner(weights=np.zeros(4))))  # dtype
    assert key(Stage(Inner(weights=np.zeros(9, np.float32)))) == key(Stage(Inner(weights=np.zeros(4, np.float32))))
    assert key(Stage(Inner(mode=Mode.A)))[1][1][2] == ("mode", Mode.A)  # an int subclass, kept as it is
    assert key(Stage(Inner(), fanouts=[4, 3])) != base
    assert kernel_warmup._settings(Inner(weights=Inner()), 1) == ("Inner", ("weights", "Inner"), ("mode", 0))  # depth
