"""Fixtures of the loader tests: stage classes a spawned stage process can import."""
from __future__ import annotations

import sys

import pytest

# Stage classes used by spawned processes must be importable there: they live
# in a module written to a temp dir that is on sys.path (spawn passes sys.path on).
STAGES_MODULE = '''
import os
from dataclasses import dataclass

import torch

from bgl.loader.stages.protocol import SourceStage, Stage
from bgl.loader.stages.map import FetchStage, SampleStage


class Numbers(SourceStage):
    name = "numbers"

    def __init__(self, count, size):
        self.count, self.size = count, size

    def items(self, epoch):
        for i in range(self.count):
            yield torch.full((self.size,), float(epoch * 1000 + i))


class Square(Stage):
    name = "square"

    def __call__(self, x):
        return {"x": x * x, "pid": os.getpid(), "cores": sorted(os.sched_getaffinity(0))}


@dataclass
class FailingSampleStage(SampleStage):
    """The real sampler, raising after ``fail_after`` batches."""

    fail_after: int = 3

    def __call__(self, mb):
        self._calls = getattr(self, "_calls", 0) + 1
        if self._calls > self.fail_after:
            raise RuntimeError(f"injected sampler failure after {self.fail_after} batches")
        return super().__call__(mb)


class Count(SourceStage):
    """Epoch e yields (e, 0), (e, 1), ... sizes[e] items."""

    name = "count"

    def __init__(self, sizes):
        self.sizes = sizes

    def items(self, epoch):
        for i in range(self.sizes[epoch]):
            yield (epoch, i)


class ReadAhead(Stage):
    """Emits (item, inputs read so far) ``k`` items behind its input."""

    name = "ahead"

    def __init__(self, k):
        self.k = k

    def reads_ahead(self):
        return self.k

    def __call__(self, item):
        raise AssertionError("a stage that reads ahead must get the stream")

    def stream(self, items):
        window, seen = [], 0
        for item in items:
            seen += 1
            window.append(item)
            if len(window) > self.k:
                yield (window.pop(0), seen)
        while window:
            yield (window.pop(0), seen)


class Unsendable(Stage):
    """Returns an item no queue can pickle on batch ``bad`` (a lock), the others as they are."""

    name = "unsendable"

    def __init__(self, bad):
        self.bad = bad

    def __call__(self, item):
        import threading

        return threading.Lock() if item[1] == self.bad else item


@dataclass
class FailingFetchStage(FetchStage):
    """The real fetch stage whose miss source raises on its ``fail_after + 1``-th call."""

    fail_after: int = 3

    def _fetch_features(self, ids):
        self._calls = getattr(self, "_calls", 0) + 1
        if self._calls > self.fail_after:
            raise RuntimeError(f"injected fetch failure after {self.fail_after} misses")
        return super()._fetch_features(ids)
'''


@pytest.fixture(scope="module")
def stages_module(tmp_path_factory):
    """The module of test stage classes (toy stages, real stages that fail on purpose)."""
    folder = tmp_path_factory.mktemp("pipeline_stages")
    (folder / "bgl_test_stages.py").write_text(STAGES_MODULE)
    sys.path.insert(0, str(folder))
    try:
        import bgl_test_stages

        yield bgl_test_stages
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("bgl_test_stages", None)
