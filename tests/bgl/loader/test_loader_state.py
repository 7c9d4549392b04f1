"""``state_dict()`` / ``load_state_dict()``: stop after k batches, save, build a new loader, load, drain --
exactly the batches an uninterrupted run yields, for node, edge and typed seeds and every pipeline."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import bgl
from bgl.store import write_store



REVERSE = {"rates": "rated-by", "rated-by": "rates"}


@pytest.fixture(scope="module")
def ratings(tmp_path_factory):
    """A generated typed user-item store (bgl.sources.recsys): typed seeds without DGL."""
    from bgl.sources.recsys import write_ratings_store

    store, _ = write_ratings_store(tmp_path_factory.mktemp("ratings") / "r", num_users=60, num_items=40, clusters=4)
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(3)
    n, deg = 300, 6
    indptr = np.arange(0, n * deg + 1, deg, dtype=np.int64)
    indices = rng.integers(0, n, n * deg).astype(np.int32)
    return write_store(tmp_path_factory.mktemp("state") / "s", indptr, indices,
                       feat=rng.random((n, 8), dtype=np.float32), label=rng.integers(0, 3, n), num_classes=3)


def _kinds(store, ratings=None):
    nodes = lambda **kw: bgl.DataLoader(store, torch.arange(250), bgl.NeighborSampler([3, 3]), batch_size=32,  # noqa: E731
                                         shuffle=True, **kw)
    edges = lambda **kw: bgl.DataLoader(  # noqa: E731
        store, torch.arange(0, 1800, 3), bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler([3, 3]), exclude="self", negative_sampler=bgl.negative_sampler.Uniform(1)),
        batch_size=64, shuffle=True, **kw)
    rates = None if ratings is None else np.flatnonzero(np.asarray(ratings.etype) == ratings.schema.etype_id("rates"))
    typed = lambda **kw: bgl.DataLoader(  # noqa: E731
        ratings, {"rates": rates}, bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler([3, 3]), exclude="reverse_types", reverse_etypes=REVERSE,
            negative_sampler=bgl.negative_sampler.Uniform(1)), batch_size=40, shuffle=True, blocks="bgl", **kw)
    return {"nodes": nodes, "edges": edges, "typed": typed}


def _key(batch) -> tuple:
    """What identifies a batch: its seeds and its first block's sampled input nodes."""
    blocks = batch[-1]
    return tuple(blocks[-1].dst_ids.tolist()), tuple(blocks[0].src_ids.tolist())


def _run(make, epochs: int, stop_after=None, **kw):
    """Keys of ``epochs`` epochs; with ``stop_after`` = k, stop after k batches of the second epoch and
    return (keys so far, the state as JSON, torch's RNG state then)."""
    torch.manual_seed(11)
    loader, keys = make(**kw), []
    try:
        for epoch in range(epochs):
            for i, batch in enumerate(loader):
                keys.append(_key(batch))
                if stop_after is not None and epoch == 1 and i + 1 == stop_after:
                    return keys, json.dumps(loader.state_dict()), torch.get_rng_state()
    finally:
        loader.close()
    return keys


@pytest.mark.parametrize("pipeline", ["inline", "thread", "processes"])
@pytest.mark.parametrize("kind", ["nodes", "edges", "typed"])
def test_a_resumed_loader_yields_exactly_the_rest_of_the_run(store, ratings, kind, pipeline):
    make = _kinds(store, ratings)[kind]
    whole = _run(make, 3, pipeline=pipeline)
    per_epoch = len(whole) // 3
    for k in ([per_epoch // 2] if pipeline == "processes" else [1, per_epoch - 1, per_epoch]):
        before, state, rng = _run(make, 3, stop_after=k, pipeline=pipeline)
        torch.manual_seed(99)  # the loader's own generator, not torch's RNG, decides the later epochs
        resumed = make(pipeline=pipeline)
        resumed.load_state_dict(json.loads(state))
        after = []
        try:
            while len(before) + len(after) < len(whole):  # the rest of epoch 1, then epoch 2 as first drawn
                after += [_key(b) for b in resumed]
        finally:
            resumed.close()
        assert before + after == whole, (kind, pipeline, k)


def test_a_state_between_epochs_starts_the_next_epoch(store):
    make = _kinds(store)["nodes"]
    torch.manual_seed(11)
    loader = make()
    first = [_key(b) for b in loader]
    state, rng = loader.state_dict(), torch.get_rng_state()
    second = [_key(b) for b in loader]
    assert state["in_epoch"] is False and state["epoch"] == 1
    torch.manual_seed(99)
    resumed = make()
    resumed.load_state_dict(state)
    assert [_key(b) for b in resumed] == second and first != second


def test_a_state_of_another_loader_is_refused_naming_what_differs(store):
    make = _kinds(store)
    loader = make["nodes"]()
    it = iter(loader)
    next(it)
    state = loader.state_dict()
    loader.close()
    other = bgl.DataLoader(store, torch.arange(250), bgl.NeighborSampler([3, 3]), batch_size=16, shuffle=True)
    with pytest.raises(ValueError, match=r"batch_size 32 \(now 16\)"):
        other.load_state_dict(state)
    fewer = bgl.DataLoader(store, torch.arange(200), bgl.NeighborSampler([3, 3]), batch_size=32, shuffle=True)
    with pytest.raises(ValueError, match="num_items 250 \\(now 200\\).*items_crc32"):
        fewer.load_state_dict(state)
    with pytest.raises(ValueError, match="world_size 2, this loader has 1"):
        make["nodes"]().load_state_dict({**state, "fingerprint": {**state["fingerprint"], "world_size": 2}})
    with pytest.raises(ValueError, match="malformed"):
        make["nodes"]().load_state_dict({k: v for k, v in state.items() if k != "epoch_seed"})
    with pytest.raises(ValueError, match="version"):
        make["nodes"]().load_state_dict({**state, "version": 99})
    with pytest.raises(ValueError, match="batch 99 of epoch 0"):
        make["nodes"]().load_state_dict({**state, "next_batch": 99})


def test_pyg_loaders_resume_through_the_same_state():
    pyg_data = pytest.importorskip("torch_geometric.data")
    from bgl.pyg import NeighborLoader

    gen = torch.Generator().manual_seed(0)
    data = pyg_data.Data(x=torch.randn(100, 4, generator=gen), edge_index=torch.randint(0, 100, (2, 600), generator=gen))
    make = lambda: NeighborLoader(data, num_neighbors=[3, 2], batch_size=16, shuffle=True)  # noqa: E731
    torch.manual_seed(2)
    loader = make()
    it = iter(loader)
    first = [next(it).n_id for _ in range(3)]
    state, rng = loader.state_dict(), torch.get_rng_state()
    rest = [b.n_id for b in it]
    loader.close()
    torch.manual_seed(99)
    resumed = make()
    resumed.load_state_dict(json.loads(json.dumps(state)))
    again = [b.n_id for b in resumed]
    resumed.close()
    assert len(first) + len(rest) == 7 and len(again) == len(rest)
    assert all(torch.equal(a, b) for a, b in zip(again, rest))


DDP_WORKER = '''
import numpy as np
import torch.distributed as dist


def run(rank, world, init_file, store_path, out_q):
    import bgl
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        make = lambda: bgl.DataLoader(store_path, np.arange(0, 250), bgl.NeighborSampler([2]), batch_size=16,
                                      shuffle=True, use_ddp=True, ddp_seed=7)
        whole, loader = [], make()
        for epoch in range(2):
            loader.set_epoch(epoch)
            whole += [out.tolist() for _, out, _ in loader]
        loader = make()
        loader.set_epoch(0)
        part = [out.tolist() for _, out, _ in loader]
        loader.set_epoch(1)
        it = iter(loader)
        part += [next(it)[1].tolist() for _ in range(3)]
        state = loader.state_dict()
        loader.close()
        resumed = make()
        resumed.load_state_dict(state)
        resumed.set_epoch(1)
        part += [out.tolist() for _, out, _ in resumed]
        out_q.put((rank, whole, part, state))
    finally:
        dist.destroy_process_group()
'''


def run_ranks(tmp_path, source: str, module: str, *args) -> dict:
    """Run ``source``'s ``run(rank, 2, init_file, *args, out_q)`` in two spawned processes (a gloo world of
    two); ``{rank: what it put on out_q after its rank}``."""
    import importlib
    import multiprocessing as mp
    import sys

    (tmp_path / f"{module}.py").write_text(source)
    sys.path.insert(0, str(tmp_path))
    procs = []
    try:
        worker = importlib.import_module(module)
        ctx = mp.get_context("spawn")
        out_q = ctx.Queue()
        procs = [ctx.Process(target=worker.run, args=(r, 2, str(tmp_path / "init"), *args, out_q)) for r in range(2)]
        for p in procs:
            p.start()
        results = {r: rest for r, *rest in (out_q.get(timeout=180) for _ in procs)}
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
    finally:
        # a rank that timed out or hangs on its peer must not outlive the test (the next tests count children)
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(timeout=10)
        sys.path.remove(str(tmp_path))
        sys.modules.pop(module, None)
    return results


def test_each_ddp_rank_resumes_its_own_share(store, tmp_path):
    results = run_ranks(tmp_path, DDP_WORKER, "bgl_state_worker", str(store.path))
    for rank, (whole, part, state) in results.items():
        assert part == whole and state["fingerprint"]["rank"] == rank and state["next_batch"] == 3
    plain = bgl.DataLoader(store, np.arange(0, 250), bgl.NeighborSampler([2]), batch_size=16, shuffle=True)
    with pytest.raises(ValueError, match="world_size 2, this loader has 1"):
        plain.load_state_dict(results[0][2])


DCP_WORKER = '''
import numpy as np
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def run(rank, world, init_file, store_path, ck_dir, out_q):
    import bgl
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        make = lambda: bgl.DataLoader(store_path, np.arange(0, 250), bgl.NeighborSampler([2]), batch_size=16,
                                      shuffle=True, use_ddp=True, ddp_seed=3)
        loader = make()
        loader.set_epoch(0)
        it = iter(loader)
        [next(it) for _ in range(4)]
        rest = [out.tolist() for _, out, _ in it]
        loader = make()
        loader.set_epoch(0)
        it = iter(loader)
        [next(it) for _ in range(4)]
        dcp.save(bgl.dcp_state(loader), storage_writer=dcp.FileSystemWriter(ck_dir))
        del it
        loader.close()
        resumed = make()
        target = bgl.dcp_state(resumed)  # the template: this rank's key, a fresh state
        dcp.load(target, storage_reader=dcp.FileSystemReader(ck_dir))
        bgl.load_dcp_state(resumed, target)
        resumed.set_epoch(0)
        out_q.put((rank, rest, [out.tolist() for _, out, _ in resumed]))
    finally:
        dist.destroy_process_group()
'''


def test_each_rank_resumes_from_torch_distributed_checkpoint(store, tmp_path):
    results = run_ranks(tmp_path, DCP_WORKER, "bgl_dcp_worker", str(store.path), str(tmp_path / "ck"))
    for rank, (rest, resumed) in results.items():
        assert len(rest) > 0 and resumed == rest, rank


def test_dcp_state_round_trip_and_bad_buffers(store):
    import torch

    make = lambda: bgl.DataLoader(store, np.arange(0, 100), bgl.NeighborSampler([2]), batch_size=16, shuffle=True)
    loader = make()
    it = iter(loader)
    next(it)
    saved = bgl.dcp_state(loader)
    assert list(saved) == ["bgl_loader.rank0"] and saved["bgl_loader.rank0"].dtype == torch.uint8
    rest = [out for _, out, _ in it]
    fresh = make()
    bgl.load_dcp_state(fresh, saved)
    again = [out for _, out, _ in fresh]
    assert len(again) == len(rest) == 6 and all(torch.equal(a, b) for a, b in zip(again, rest))
    with pytest.raises(ValueError, match="has no 'bgl_loader.rank0'"):
        bgl.load_dcp_state(fresh, {})
    with pytest.raises(ValueError, match="is not a bgl loader state"):
        bgl.load_dcp_state(fresh, {"bgl_loader.rank0": torch.zeros(16 << 10, dtype=torch.uint8)})
