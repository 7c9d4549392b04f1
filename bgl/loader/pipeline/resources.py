"""Split CPU cores between pipeline stages so their throughputs match (BGL's resource isolation).

A pipeline runs at the speed of its slowest stage, and stages that share
cores slow each other down.  BGL therefore profiles each stage briefly and
gives every stage its own cores, more to the slower ones.  Here:

1. :func:`profile_stages` runs a few batches through the stages inline, with
   one thread, and records seconds per batch per core for each stage.
2. :func:`split_cores` solves ``minimise max_s t_s / c_s`` subject to
   ``sum c_s <= C, c_s >= 1`` (throughput of stage ``s`` with ``c_s`` cores is
   modelled as ``c_s / t_s``).  Handing cores one at a time to the current
   bottleneck is optimal for this min-max problem.  With fewer cores than
   stages, stages share: each goes to the least loaded core, slowest first
   (LPT scheduling).
3. :func:`resolve_stage_cores` turns a user override (``{"sample": [0],
   "fetch": [1]}`` or counts ``{"sample": 3, "fetch": 1}``) into core lists.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoreSplit:
    """Cores chosen per stage and the throughput the profile predicts.

    ``cores``: {stage: [core ids]}; ``seconds_per_batch``: {stage: s/batch on
    one core}; ``batches_per_second``: {stage: predicted throughput with its
    cores, accounting for shared cores}; ``source``: "profile" or "override".
    """

    cores: dict[str, list[int]]
    seconds_per_batch: dict[str, float]
    batches_per_second: dict[str, float]
    source: str

    @property
    def bottleneck(self) -> str | None:
        """Name of the stage with the lowest predicted batches/s, or None without a profile."""
        if not self.batches_per_second:
            return None
        return min(self.batches_per_second, key=self.batches_per_second.get)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of the split, including ``bottleneck``."""
        return {"cores": self.cores, "seconds_per_batch": self.seconds_per_batch,
                "batches_per_second": self.batches_per_second, "source": self.source,
                "bottleneck": self.bottleneck}

    def describe(self) -> str:
        """One human-readable line per stage: its cores and, when profiled, ms/batch/core and predicted
        batches/s.
        """
        parts = []
        for name, cores in self.cores.items():
            t = self.seconds_per_batch.get(name)
            bps = self.batches_per_second.get(name)
            extra = f", {t * 1e3:.2f} ms/batch/core, ~{bps:.1f} batches/s" if t and bps else ""
            parts.append(f"{name}: cores {cores}{extra}")
        return f"stage cores ({self.source}): " + "; ".join(parts)


def available_cores() -> list[int]:
    """Cores this process may run on (its affinity mask), sorted."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))  # pragma: no cover - non-Linux


def _check_times(seconds_per_batch: Mapping[str, float]) -> dict[str, float]:
    if not seconds_per_batch:
        raise ValueError("need at least one stage to split cores between")
    out = {}
    for name, t in seconds_per_batch.items():
        t = float(t)
        if not t >= 0.0 or t == float("inf"):
            raise ValueError(f"seconds per batch of stage {name!r} must be finite and >= 0, got {t!r}")
        out[name] = max(t, 1e-9)  # a free stage still needs somewhere to run
    return out


def core_counts(seconds_per_batch: Mapping[str, float], num_cores: int) -> dict[str, int]:
    """Cores per stage minimising the slowest stage's time per batch; needs ``num_cores >= stages``.

    Greedy water-filling: start every stage at one core, then give each
    remaining core to the stage with the largest ``t_s / c_s``.
    """
    times = _check_times(seconds_per_batch)
    if num_cores < len(times):
        raise ValueError(f"{num_cores} cores cannot give each of {len(times)} stages its own core")
    counts = {name: 1 for name in times}
    for _ in range(num_cores - len(times)):
        slowest = max(times, key=lambda s: times[s] / counts[s])
        counts[slowest] += 1
    return counts


def split_cores(seconds_per_batch: Mapping[str, float], cores: Sequence[int] | None = None,
                *, reserve: int = 0) -> CoreSplit:
    """Assign concrete cores to stages from per-core profile times.

    Parameters
    ----------
    seconds_per_batch : {stage: seconds per batch on one core}
    cores : core ids to use (default: this process's affinity)
    reserve : cores kept out of the split (for the trainer), taken from the
        end of ``cores`` only while every stage still gets a core of its own.

    Returns
    -------
    CoreSplit with contiguous core ranges per stage (stages in the given order).
    """
    times = _check_times(seconds_per_batch)
    pool = list(cores) if cores is not None else available_cores()
    if not pool:
        raise ValueError("no cores to split")
    if reserve < 0:
        raise ValueError(f"reserve must be >= 0, got {reserve}")
    # The reserve is honoured only while every stage still gets a core of its own.
    usable = pool[: len(pool) - reserve] if len(pool) - reserve >= len(times) else pool
    if len(usable) >= len(times):
        counts = core_counts(times, len(usable))
        out, pos = {}, 0
        for name in times:
            out[name] = usable[pos: pos + counts[name]]
            pos += counts[name]
        bps = {name: counts[name] / times[name] for name in times}
    else:
        # Fewer cores than stages: longest stage first onto the least loaded core.
        load = {c: 0.0 for c in usable}
        out = {}
        for name in sorted(times, key=times.get, reverse=True):
            core = min(usable, key=lambda c: (load[c], c))
            load[core] += times[name]
            out[name] = [core]
        out = {name: out[name] for name in times}
        # A shared core runs its stages one after another.
        bps = {name: 1.0 / load[out[name][0]] for name in times}
    return CoreSplit(cores=out, seconds_per_batch=dict(times), batches_per_second=bps, source="profile")


def resolve_stage_cores(override: Mapping[str, Any], stage_names: Iterable[str],
                        cores: Sequence[int] | None = None) -> CoreSplit:
    """Turn ``{"sample": [0], "fetch": [1]}`` or ``{"sample": 2, "fetch": 1}`` into a CoreSplit.

    Stages not named get no pinning (they run on any core).

    Raises
    ------
    ValueError
        naming the stage for unknown stage names, cores outside the
        allowed set, counts < 1, or counts that exceed the cores available.
    """
    names = list(stage_names)
    pool = list(cores) if cores is not None else available_cores()
    if not isinstance(override, Mapping):
        raise ValueError(f"stage_cores must be a dict {{stage: [cores] or count}}, got {override!r}")
    unknown = sorted(set(override) - set(names))
    if unknown:
        raise ValueError(f"stage_cores names unknown stages {unknown}; stages are {names}")
    out: dict[str, list[int]] = {}
    next_free = 0
    for name in names:
        if name not in override:
            continue
        spec = override[name]
        if isinstance(spec, bool):
            raise ValueError(f"stage_cores[{name!r}] must be a core list or a count, got {spec!r}")
        if isinstance(spec, int):
            if spec < 1:
                raise ValueError(f"stage_cores[{name!r}] count must be >= 1, got {spec}")
            if next_free + spec > len(pool):
                raise ValueError(f"stage_cores asks for {next_free + spec} cores in total; "
                                 f"only {len(pool)} available ({pool})")
            out[name] = pool[next_free: next_free + spec]
            next_free += spec
            continue
        try:
            chosen = [int(c) for c in spec]
        except (TypeError, ValueError):
            raise ValueError(f"stage_cores[{name!r}] must be a core list or a count, got {spec!r}") from None
        bad = [c for c in chosen if c not in pool]
        if not chosen or bad:
            raise ValueError(f"stage_cores[{name!r}] = {spec!r}: cores {bad or '[]'} not in the "
                             f"available set {pool}")
        out[name] = chosen
    return CoreSplit(cores=out, seconds_per_batch={}, batches_per_second={}, source="override")


def profile_stages(source, stages: Sequence[Any], epoch: Any, num_batches: int = 4,
                   warmup: int = 1) -> dict[str, float]:
    """Seconds per batch on one core for each map stage, from a short inline run.

    Runs ``warmup + num_batches`` items of ``source.items(epoch)`` through
    ``stages`` in this process with one torch/numba thread, timing each
    stage's call.  The first ``warmup`` batches (JIT compilation, page
    faults of a cold store) are not counted.

    Returns {stage name: mean seconds per batch}.
    """
    from ...threads import thread_limits

    totals = {s.name: 0.0 for s in stages}
    counted = 0
    with thread_limits(1):
        for s in stages:
            s.open()
        for i, item in enumerate(source.items(epoch)):
            if i >= warmup + num_batches:
                break
            for s in stages:
                t0 = time.perf_counter()
                item = s(item)
                if i >= warmup:
                    totals[s.name] += time.perf_counter() - t0
            if i >= warmup:
                counted += 1
    if counted == 0:
        return {name: 0.0 for name in totals}
    return {name: t / counted for name, t in totals.items()}


def profile_core_split(order_stage, sample_stage, fetch_stage) -> CoreSplit:
    """Cores per stage for ``pipeline="processes"``, from a three-batch probe on copies of the stages.

    The probe orders seeds at random: a proximity BFS over the whole graph would cost
    more than the probe.  A core is kept for the trainer only when there are cores to
    spare.
    """
    import copy
    import dataclasses

    sample, fetch = copy.deepcopy(sample_stage), copy.deepcopy(fetch_stage)
    order = dataclasses.replace(order_stage, order="random")
    try:
        times = profile_stages(order, [sample, fetch], (0, 0), num_batches=3, warmup=1)
    finally:
        sample.close()
        fetch.close()
    pool = available_cores()
    return split_cores(times, pool, reserve=1 if len(pool) >= 4 else 0)
