"""One epoch's batches as an iterator that owns the epoch (and keeps its loader alive).

DGL's loops rely on two idioms that hold no reference to the loader itself:

* ``for batch in DataLoader(g, ids, sampler):`` -- the loader is a temporary;
* ``next(iter(DataLoader(...)))`` -- the notebook idiom.

When the epoch was a bare generator, nothing referenced the loader while it
ran, so CPython collected it at once and its ``__del__`` closed the running
epoch: the loop saw zero batches and no error.  An :class:`EpochIterator`
holds its loader until the epoch ends or the iterator is closed or collected,
and the loader holds only a weak reference back, so an abandoned iterator is
collected (and its stages stopped: processes joined, the background thread
joined, queues closed) as soon as the caller drops it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from ...sampler.jit_pages import release_jit_pages_soon
from ..trainer_wait import TrainerWait, timed_next


class EpochIterator:
    """The batches of one epoch; closing it (or dropping it) stops the epoch's stages.

    Parameters
    ----------
    owner : the loader whose epoch this is (kept alive until the epoch ends)
    items : generator of the epoch's batches (a pipeline epoch); closed exactly once
    start : index of the epoch's first batch ``items`` yields (> 0 for a resumed epoch)
    wait : where the trainer's time blocked in ``next()`` is counted (:mod:`bgl.loader.trainer_wait`)
    on_end : called once the epoch's stages have stopped (the loader releases per-epoch memory there)
    """

    def __init__(self, owner: Any, items: Iterator[Any], start: int = 0, wait: Optional[TrainerWait] = None,
                 on_end: Optional[Callable[[], None]] = None):
        self._owner: Optional[Any] = owner
        self._items: Optional[Iterator[Any]] = items
        self._on_end = on_end
        self.wait = wait if wait is not None else TrainerWait()
        self._first = True
        self.position = int(start)  # index of the next batch of the epoch (state/position.py)

    def __iter__(self) -> "EpochIterator":
        return self

    def __next__(self) -> Any:
        if self._items is None:
            raise StopIteration
        try:
            item = timed_next(self._items, self.wait)
        except BaseException:  # end of epoch, a stage error or Ctrl-C: the epoch is over either way
            self.close()
            raise
        if self._first:  # every stage's kernels are loaded now: LLVM's pages can go (jit_pages.py)
            self._first = False
            release_jit_pages_soon()
        self.position += 1
        return item

    @property
    def running(self) -> bool:
        """True until the epoch has ended or been closed."""
        return self._items is not None

    def close(self) -> None:
        """Stop the epoch's stages (idempotent); the loader may start a new epoch afterwards."""
        items, self._items = self._items, None
        self._owner = None
        self.wait.end()
        if items is not None and hasattr(items, "close"):
            items.close()
        on_end, self._on_end = self._on_end, None
        if items is not None and on_end is not None:
            on_end()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the pipeline's own finalizer still reaps processes
            pass


class TimedEpochs:
    """``__iter__`` and ``stats()`` for a loader that reshapes the batches of a ``bgl.DataLoader``
    (``self._loader``) in a generator of its own, ``self._epoch_batches()`` (the PyG loaders).

    The reshaping (bgl blocks to PyG's ``Data``) runs inside the trainer's ``next()``, so the wait is
    timed around the outer iterator, by the same :class:`~bgl.loader.trainer_wait.TrainerWait` the
    inner loader uses; the epoch number and pipeline are the inner loader's.  The outer iterator is an
    :class:`EpochIterator` too: dropping or closing it closes the generator, and so the inner epoch.
    """

    _outer_wait: Optional[TrainerWait] = None

    def _epoch_batches(self) -> Iterator[Any]:
        raise NotImplementedError

    def __iter__(self) -> EpochIterator:
        self._outer_wait = TrainerWait()
        return EpochIterator(self, self._epoch_batches(), 0, self._outer_wait)

    def stats(self) -> dict:
        """The trainer's wait in the latest epoch, conversion included (see :meth:`bgl.DataLoader.stats`;
        ``epoch`` is the inner loader's, which starts at the epoch's first ``next()``)."""
        inner = self._loader.stats()
        if self._outer_wait is None:
            return inner
        return {**inner, **self._outer_wait.as_dict(), "epoch": inner["epoch"]}
