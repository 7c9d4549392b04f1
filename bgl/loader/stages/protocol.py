"""The stage protocol: what every stage of a :class:`~bgl.loader.pipeline.chain.Pipeline` implements.

One contract for every seed kind: the order stage is a :class:`SourceStage`
(an epoch in, that epoch's batches out) and sample, fetch and transfer are
:class:`Stage` s (one item in, one item out).  The pipeline's three runners
import it from here: the trainer side (:mod:`bgl.loader.pipeline.chain`), the
inline chain (:mod:`bgl.loader.pipeline.inline`) and the stage process
(:mod:`bgl.loader.pipeline.stage_process`), so none of them imports another to learn
what a stage is.
"""
from __future__ import annotations

from typing import Any, Iterator


class Stage:
    """One job of the pipeline.  Subclasses are picklable specs.

    ``name`` identifies the stage in logs, core maps and errors.  ``open()``
    creates live resources in the process that runs the stage, ``__call__``
    does the job for one item, ``close()`` releases the resources.

    A stage that must see items before it emits the current one (the fetch
    stage announcing sampled batches to a lookahead cache) returns how many
    from :meth:`reads_ahead` and implements :meth:`stream`; the pipeline then
    hands it the epoch's items as an iterator, in both modes.
    """

    name: str = "stage"

    def open(self) -> None:  # pragma: no cover - default is stateless
        """Create live resources in the process that runs the stage (default: none)."""

    def __call__(self, item: Any) -> Any:
        raise NotImplementedError

    def reads_ahead(self) -> int:
        """Items this stage reads before emitting the current one (called after :meth:`open`);
        > 0 makes the pipeline call :meth:`stream` instead of mapping item by item."""
        return 0

    def stream(self, items: Iterator[Any]) -> Iterator[Any]:
        """One output per input item, in order (default: ``self(item)`` for each)."""
        for item in items:
            yield self(item)

    def close(self) -> None:
        """Release what :meth:`open` created; called once when the stage ends (default: nothing)."""


class SourceStage(Stage):
    """First stage: turns an epoch descriptor into that epoch's items."""

    def items(self, epoch: Any) -> Iterator[Any]:
        """Yield this epoch's items; ``epoch`` is whatever the pipeline's caller passes per epoch."""
        raise NotImplementedError

    def __call__(self, item: Any) -> Any:  # a source only yields
        raise TypeError(f"source stage {self.name!r} is not a map stage")
