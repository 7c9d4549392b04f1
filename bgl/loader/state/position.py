"""A loader's position in its epochs as plain data: ``state_dict()`` / ``load_state_dict()``, torchdata's meaning.

torchdata's ``StatefulDataLoader`` made "where was the loader" part of a checkpoint: a loader built
the same way and given the state yields exactly the batches the first had not yet yielded, in the
same order.  bgl's batches are a pure function of ``(epoch seed, batch index)`` -- the order stage
cuts the epoch's order into batches and each batch's sampling seed is ``epoch seed`` and its index
(:meth:`~bgl.loader.stages.order.OrderStage.items`) -- so the state is a handful of integers: the
epoch, its seed, the next batch's index, and what the loader was built over, to refuse a state that
belongs to another loader.  Resuming starts the epoch's order at that index: batches before it are
neither sampled nor fetched, whatever the pipeline (inline, thread, processes: batches prepared but
not yet yielded are simply made again), graph servers or local graph; the cache refills.

Every epoch's seed is a pure function of the epoch number and one integer: ``ddp_seed`` (and the rank)
with ``use_ddp``, else the loader's own generator seed, read from torch's RNG when the loader is built
(:func:`generator_seed_from_torch`: so ``torch.manual_seed`` before building decides every epoch, as
with DGL, and building draws nothing from the script's stream) and carried in the state.  A resumed loader's later epochs therefore equal the first run's whatever the script does to
torch's RNG before or after ``load_state_dict`` (torchdata's sampler keeps its generator in the state
for the same reason).  A version-1 state (no generator seed) keeps the new loader's own.  The state holds no object, only
ints and strings, so it goes through ``torch.save``, JSON and ``torch.distributed.checkpoint`` alike
(keep one per rank there: DCP keeps rank 0's copy of a plain object).
"""
from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass
from typing import Optional

import numpy as np

STATE_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: before the generator seed


@dataclass(frozen=True)
class LoaderState:
    """Where a loader is: ``next_batch`` of ``epoch`` (seed ``epoch_seed``) is the next it yields;
    ``in_epoch`` False between epochs (then the next ``iter()`` starts epoch ``epoch`` afresh);
    ``generator_seed`` the loader's own (None with ``use_ddp``, whose seeds come from ``ddp_seed``)."""

    epoch: int
    epoch_seed: int
    next_batch: int
    in_epoch: bool
    fingerprint: dict
    generator_seed: Optional[int] = None

    def to_dict(self) -> dict:
        return {"version": STATE_VERSION, **asdict(self)}


def fingerprint(ids: np.ndarray, batch_size: int, drop_last: bool, shuffle: bool, order: str,
                world: int, rank: int, num_batches: int) -> dict:
    """What a state must agree on with the loader given it: this rank's seed items (a CRC-32 of their
    bytes: O(n) once per ``state_dict``), the batching, the order and the DDP world."""
    items = np.ascontiguousarray(ids, dtype=np.int64)
    return {"num_items": int(items.shape[0]), "items_crc32": int(zlib.crc32(items.tobytes())),
            "batch_size": int(batch_size), "drop_last": bool(drop_last), "shuffle": bool(shuffle), "order": order,
            "world_size": int(world), "rank": int(rank), "num_batches": int(num_batches)}


def parse_state(state, expected: dict) -> LoaderState:
    """The :class:`LoaderState` of a ``state_dict()``; ValueError naming what is missing, malformed or
    different from this loader (another graph's seeds, batch size, order, world size ...)."""
    if not isinstance(state, dict):
        raise TypeError(f"a loader state is the dict state_dict() returned, got {type(state).__name__}")
    if state.get("version") not in READABLE_VERSIONS:
        raise ValueError(f"loader state version {state.get('version')!r} is not one of {READABLE_VERSIONS}; "
                         "it was saved by another bgl")
    try:
        generator_seed = state.get("generator_seed")
        parsed = LoaderState(int(state["epoch"]), int(state["epoch_seed"]), int(state["next_batch"]),
                             bool(state["in_epoch"]), dict(state["fingerprint"]),
                             None if generator_seed is None else int(generator_seed))
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"loader state is malformed ({type(e).__name__}: {e}); pass what state_dict() returned") from None
    saved = parsed.fingerprint
    for key in ("world_size", "rank"):  # the clearest reason first
        if saved.get(key) != expected[key]:
            raise ValueError(f"loader state was saved with {key} {saved.get(key)}, this loader has {expected[key]}; "
                             "resume with the same number of trainers (one state per rank)")
    differ = [k for k in expected if saved.get(k) != expected[k]]
    if differ:
        what = ", ".join(f"{k} {saved.get(k)!r} (now {expected[k]!r})" for k in differ)
        raise ValueError(f"loader state belongs to another loader: {what}; build the loader as the saved one "
                         "was (same graph, seeds, batch size, order)")
    if not 0 <= parsed.next_batch <= expected["num_batches"] or parsed.epoch < 0:
        raise ValueError(f"loader state points at batch {parsed.next_batch} of epoch {parsed.epoch}, outside "
                         f"[0, {expected['num_batches']}]")
    return parsed


def epoch_seed(epoch: int, generator_seed: Optional[int], ddp: Optional[tuple[int, int]] = None) -> int:
    """Epoch ``epoch``'s seed: a pure function of the epoch and the loader's generator seed, or under DDP
    of ``ddp = (ddp_seed, rank)``, as DGL's are (so every resumed epoch is the first run's)."""
    entropy = [ddp[0], epoch, ddp[1]] if ddp is not None else [generator_seed, epoch]
    return int(np.random.default_rng(entropy).integers(0, 2**62))


def generator_seed_from_torch() -> int:
    """The seed ``torch.randint(0, 2**62, (1,))`` would draw next, torch's RNG left as it was: a
    loader's construction draws no random numbers (as DGL's does not), so a model built after it
    initialises as it would without bgl."""
    import torch

    state = torch.get_rng_state()
    try:
        return int(torch.randint(0, 2**62, (1,)).item())
    finally:
        torch.set_rng_state(state)


class ResumePoint:
    """The loader's pending resume: applied by the next ``iter()`` that starts epoch ``epoch``."""

    def __init__(self, state: Optional[LoaderState] = None):
        self.state = state

    def take(self, epoch: int) -> Optional[tuple[int, int]]:
        """``(epoch_seed, start batch)`` when the epoch starting now is the saved one, then forgotten."""
        state, self.state = self.state, None
        if state is None or not state.in_epoch or state.epoch != epoch:
            return None
        return state.epoch_seed, state.next_batch


class DelegatedState:
    """``state_dict()`` / ``load_state_dict()`` of a loader built over a ``bgl.DataLoader`` in
    ``self._loader`` (the PyG loaders): its position is that loader's."""

    def state_dict(self) -> dict:
        """Where the loader is (see :meth:`bgl.DataLoader.state_dict`)."""
        return self._loader.state_dict()

    def load_state_dict(self, state: dict) -> None:
        """Resume from :meth:`state_dict` (see :meth:`bgl.DataLoader.load_state_dict`)."""
        self._loader.load_state_dict(state)
