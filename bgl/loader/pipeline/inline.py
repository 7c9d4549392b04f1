"""The inline chain: a pipeline's stages as nested generators in the calling thread.

Used by :class:`bgl.loader.pipeline.chain.Pipeline` in ``inline`` mode, and by its
``thread`` mode on both sides of the hand-off (the producer thread runs the
source and map stages, the trainer the trainer stages).  Every failure is
re-raised as :class:`~bgl.errors.PipelineError` naming the stage it came from.
"""
from __future__ import annotations

import logging
import traceback
from functools import partial
from typing import Any, Iterator, Sequence

from ...errors import PipelineError
from ...sampler.jit_pages import release_jit_pages_soon
from ..stages.protocol import SourceStage, Stage

log = logging.getLogger("bgl.loader.pipeline.chain")


def stage_failed(name: str, e: BaseException) -> PipelineError:
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
    return PipelineError(f"pipeline stage {name!r} failed: {type(e).__name__}: {e}\n"
                         f"--- traceback from stage {name!r} ---\n{text.rstrip()}")


def source_items(source: SourceStage, epoch: Any) -> Iterator[Any]:
    """``source.items(epoch)``, naming the source if it raises."""
    yield from _named(source.name, source.items(epoch))


def run_chain(items: Iterator[Any], stages: Sequence[Stage]) -> Iterator[Any]:
    """``items`` through ``stages`` in this thread; closing it closes every stage's generator."""
    chain = [items]
    for s in stages:
        chain.append(streamed(s, chain[-1]) if s.reads_ahead() > 0 else mapped(s, chain[-1]))
    try:
        yield from chain[-1]
    finally:
        # outermost first: a stage reading ahead drops what it read and never emitted
        for gen in reversed(chain):
            gen.close()


def mapped(stage: Stage, items: Iterator[Any]) -> Iterator[Any]:
    """``stage(item)`` for each item (inline); an upstream PipelineError passes through.

    Through ``map`` so that no generator frame keeps the batch it last yielded: a ``for item
    in items: yield stage(item)`` loop holds it while suspended, i.e. while the next batch is
    sampled and gathered, after the trainer has dropped it (one batch of feature rows more
    than DGL's loader at steady state: 45 MB on CiteSeer's paper-word graph).  After the first
    item the stage's kernels are loaded, so LLVM's library pages start to go, beside the next stage
    (:func:`bgl.sampler.jit_pages.release_jit_pages_soon`).
    """
    out = map(partial(apply_stage, stage), items)
    try:
        first = [next(out)]
    except StopIteration:
        return
    release_jit_pages_soon()
    yield first.pop()
    yield from out


def streamed(stage: Stage, items: Iterator[Any]) -> Iterator[Any]:
    """``stage.stream(items)`` (inline), naming the stage if it raises."""
    yield from _named(stage.name, stage.stream(items))


def _named(name: str, out: Iterator[Any]) -> Iterator[Any]:
    """The items of ``out``; an exception from it is re-raised naming stage ``name``, except an
    upstream PipelineError (already naming its stage), which passes through; ``out`` is closed
    at the end.  Each item is popped as it is yielded: a suspended frame keeps no batch (see mapped)."""
    held: list = []
    try:
        while True:
            try:
                held.append(next(out))
            except StopIteration:
                return
            except PipelineError:
                raise
            except Exception as e:
                raise stage_failed(name, e) from e
            yield held.pop()
    finally:
        close = getattr(out, "close", None)
        if close is not None:
            close()


def apply_stage(stage: Stage, item: Any) -> Any:
    """Run one map stage in this process, naming the stage if it raises."""
    try:
        return stage(item)
    except Exception as e:
        raise stage_failed(stage.name, e) from e


def close_quietly(stage: Stage) -> None:
    try:
        stage.close()
    except Exception as e:
        log.warning("closing stage %s failed: %s", stage.name, e)
