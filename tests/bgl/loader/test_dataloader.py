"""bgl.DataLoader on graph stores: DGL semantics, inline vs processes, caches, DDP, bad input."""
from __future__ import annotations

import os
import sys

import numpy as np
import psutil
import pytest
import torch

import bgl
from bgl.errors import ServerUnavailable


def check_batch(store, input_nodes, output_nodes, blocks, fanouts):
    """Blocks chain like DGL's, carry the store's rows, and respect the fanouts."""
    assert len(blocks) == len(fanouts)
    assert torch.equal(blocks[-1].dst_ids, output_nodes)
    assert torch.equal(blocks[0].src_ids, input_nodes)
    for inner, outer in zip(blocks[:-1], blocks[1:]):
        assert torch.equal(inner.dst_ids, outer.src_ids)
    for block, fanout in zip(blocks, fanouts):
        assert int((block.indptr[1:] - block.indptr[:-1]).max()) <= fanout
    assert torch.equal(blocks[0].srcdata["feat"], torch.from_numpy(store.feat[input_nodes.numpy()]))
    assert torch.equal(blocks[-1].dstdata["label"], torch.from_numpy(store.label[output_nodes.numpy()]))


def epoch_outputs(loader):
    return [out.clone() for _, out, _ in loader]


def test_inline_epoch_covers_every_seed_once_with_store_rows(random_store):
    train = torch.from_numpy(np.array(random_store.train_idx))
    loader = bgl.DataLoader(random_store, train, bgl.NeighborSampler([4, 3]), batch_size=64, shuffle=True)
    assert len(loader) == -(-train.numel() // 64)
    for _ in range(2):
        outs = []
        for input_nodes, output_nodes, blocks in loader:
            check_batch(random_store, input_nodes, output_nodes, blocks, [4, 3])
            assert isinstance(blocks[0], bgl.Block)
            outs.append(output_nodes)
        assert len(outs) == len(loader)
        assert torch.equal(torch.cat(outs).sort().values, train.sort().values)
    assert loader.cache_stats() is None


def test_shuffle_false_keeps_order_and_drop_last_drops_the_tail(random_store):
    ids = torch.from_numpy(np.array(random_store.val_idx))[:70]
    plain = bgl.DataLoader(str(random_store.path), ids, bgl.NeighborSampler([2]), batch_size=32)
    outs = epoch_outputs(plain)
    assert [o.numel() for o in outs] == [32, 32, 6] and torch.equal(torch.cat(outs), ids)
    dropped = bgl.DataLoader(random_store, ids, bgl.NeighborSampler([2]), batch_size=32, drop_last=True)
    assert len(dropped) == 2 and [o.numel() for o in epoch_outputs(dropped)] == [32, 32]


def test_torch_seed_makes_epochs_reproducible_and_epochs_differ(random_store):
    ids = np.asarray(random_store.train_idx)

    def two_epochs():
        torch.manual_seed(7)
        loader = bgl.DataLoader(random_store, ids, bgl.NeighborSampler([3, 3]), batch_size=50, shuffle=True)
        return [[(inp.clone(), out.clone()) for inp, out, _ in loader] for _ in range(2)]

    a, b = two_epochs(), two_epochs()
    for ea, eb in zip(a, b):
        for (ia, oa), (ib, ob) in zip(ea, eb):
            assert torch.equal(ia, ib) and torch.equal(oa, ob)
    assert not torch.equal(a[0][0][1], a[1][0][1])  # a new permutation each epoch


@pytest.mark.parametrize("order,pipeline", [("proximity", "inline"), ("random", "inline"), ("random", "thread")])
def test_next_epoch_order_prefetch_changes_no_batch(random_store, order, pipeline):
    """The order of epoch k+1 (a BFS, or a shuffle) is built during epoch k; it must be the order built
    on demand."""
    ids = np.asarray(random_store.train_idx)

    def epochs(prefetch: bool, draw_in_loop: bool):
        torch.manual_seed(11)
        loader = bgl.DataLoader(random_store, ids, bgl.NeighborSampler([3]), batch_size=40, shuffle=True,
                                order=order, pipeline=pipeline)
        loader._next_order.enabled = prefetch
        seen = []
        for _ in range(4):
            batches = []
            for _inp, out, _ in loader:
                batches.append(out.clone())
                if draw_in_loop:
                    torch.rand(1)  # a training loop that draws (dropout): epoch seeds do not depend on it
            seen.append(torch.cat(batches))
        return seen, loader._order_stage.prefetch_hits

    for draw in (False, True):
        with_prefetch, hits = epochs(True, draw)
        without, no_hits = epochs(False, draw)
        assert no_hits == 0
        for a, b in zip(with_prefetch, without):
            assert torch.equal(a, b)
        # later epochs come from the prefetch: their seeds are the loader's generator's, not torch's RNG
        assert hits >= 2
    assert not torch.equal(with_prefetch[0], with_prefetch[1])


def test_processes_match_inline_batch_for_batch_with_cache_and_pinning(spawned_children, random_store):
    ids = np.asarray(random_store.train_idx)
    kw = dict(batch_size=40, shuffle=True, order="proximity", cache="fifo", cache_ratio=0.2)
    cores = sorted(os.sched_getaffinity(0))
    runs = {}
    for mode in ("inline", "processes"):
        torch.manual_seed(3)
        extra = {"stage_cores": {"sample": [cores[0]], "fetch": [cores[-1]]}} if mode == "processes" else {}
        with bgl.DataLoader(random_store, ids, bgl.NeighborSampler([5, 5]), pipeline=mode, **kw, **extra) as loader:
            epochs = []
            for _ in range(2):
                batches = []
                for inp, out, blocks in loader:
                    check_batch(random_store, inp, out, blocks, [5, 5])
                    batches.append((inp.clone(), out.clone()))
                epochs.append(batches)
            if mode == "processes":
                pids = loader.stage_pids()
                assert set(pids) == {"order", "sample", "fetch"}
                assert psutil.Process(pids["sample"]).cpu_affinity() == [cores[0]]
                assert psutil.Process(pids["fetch"]).cpu_affinity() == [cores[-1]]
                assert loader.core_split.source == "override"
            stats = loader.cache_stats()
        runs[mode] = (epochs, stats)
    for ea, eb in zip(runs["inline"][0], runs["processes"][0]):
        assert len(ea) == len(eb) == len(loader)
        for (ia, oa), (ib, ob) in zip(ea, eb):
            assert torch.equal(oa, ob) and torch.equal(ia, ib)
    for mode in runs:
        stats = runs[mode][1]
        assert stats["requests"] == stats["hits"] + stats["misses"] > 0
    assert runs["inline"][1]["hits"] == runs["processes"][1]["hits"]
    assert not spawned_children()


@pytest.mark.parametrize("policy", ["lru", "static-degree", "presample", "none"])
def test_every_cache_policy_returns_the_store_rows(random_store, policy):
    ids = np.asarray(random_store.train_idx)[:120]
    loader = bgl.DataLoader(random_store, ids, bgl.NeighborSampler([5, 5]), batch_size=40, cache=policy,
                            cache_bytes=100 * 16 * 4)
    for _ in range(2):
        for inp, out, blocks in loader:
            check_batch(random_store, inp, out, blocks, [5, 5])
    stats = loader.cache_stats()
    assert stats["requests"] > 0
    if policy != "none":
        assert stats["hits"] > 0


DDP_WORKER = '''
import os
import numpy as np
import torch.distributed as dist


def run(rank, world, init_file, store_path, out_q):
    os.environ.setdefault("DGLBACKEND", "pytorch")
    import bgl
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        result = {}
        for drop_last in (False, True):
            ids = np.arange(10, 31)  # 21 seeds over 2 ranks
            loader = bgl.DataLoader(store_path, ids, bgl.NeighborSampler([2]), batch_size=4, shuffle=True,
                                    drop_last=drop_last, use_ddp=True, ddp_seed=5)
            epochs = []
            for epoch in range(2):
                loader.set_epoch(epoch)
                epochs.append([out.tolist() for _, out, _ in loader])
            result[drop_last] = (len(loader), epochs)
        out_q.put((rank, result))
    finally:
        dist.destroy_process_group()
'''


def test_ddp_splits_seeds_across_ranks_like_dgl(random_store, tmp_path):
    import multiprocessing as mp

    (tmp_path / "bgl_ddp_worker.py").write_text(DDP_WORKER)
    sys.path.insert(0, str(tmp_path))
    try:
        import bgl_ddp_worker

        ctx = mp.get_context("spawn")
        out_q = ctx.Queue()
        procs = [ctx.Process(target=bgl_ddp_worker.run,
                             args=(r, 2, str(tmp_path / "ddp_init"), str(random_store.path), out_q))
                 for r in range(2)]
        for p in procs:
            p.start()
        results = dict(out_q.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == 0
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("bgl_ddp_worker", None)
    ids = list(range(10, 31))
    for drop_last in (False, True):
        # DGL: rank r owns the contiguous chunk [r*k, (r+1)*k), k = ceil(21/2) = 11 (padded) or floor = 10.
        k = 10 if drop_last else 11
        chunks = {0: set(ids[:k]), 1: set(ids[k:2 * k])}
        for rank in (0, 1):
            length, epochs = results[rank][drop_last]
            assert length == (k // 4 if drop_last else -(-k // 4))
            for batches in epochs:
                seen = [v for b in batches for v in b]
                assert len(batches) == length
                assert set(seen) <= chunks[rank]
                # Padded: rank 1 repeats one of its 10 seeds to match rank 0's 11; dropped: 2 batches of 4.
                assert len(seen) == (8 if drop_last else k)
                if not drop_last:
                    assert set(seen) == chunks[rank]
            assert epochs[0] != epochs[1]  # set_epoch reshuffles


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("indices,error,match", [
    (torch.tensor([1.0, 2.0]), TypeError, "float32"),
    (np.array([0.5]), TypeError, "float64"),
    (torch.tensor([0, 500]), ValueError, "500"),
    (np.array([-3, 1]), ValueError, "-3"),
    (np.array([[1, 2]]), ValueError, "1-D"),
])
def test_bad_indices_fail_before_anything_starts(spawned_children, random_store, indices, error, match):
    with pytest.raises(error, match=match):
        bgl.DataLoader(random_store, indices, bgl.NeighborSampler([2]), batch_size=4, pipeline="processes")
    assert not spawned_children()


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(graph_sampler=object()), TypeError, "unsupported graph_sampler"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), batch_size=0), ValueError, "batch_size"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), pipeline="threads"), ValueError, "threads"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), order="bfs"), ValueError, "bfs"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), cache="magic"), ValueError, "magic"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), cache_ratio=2.0, cache="fifo"), ValueError, "cache_ratio"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), stage_cores={"sampling": [0]}), ValueError, "sampling"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), frobnicate=1), TypeError, "frobnicate"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), queue_size=0), ValueError, "queue_size"),
    (dict(graph_sampler=bgl.NeighborSampler([2]), queue_size=True), ValueError, "queue_size"),
])
def test_bad_arguments_name_the_problem(random_store, kwargs, error, match):
    with pytest.raises(error, match=match):
        bgl.DataLoader(random_store, np.arange(10), **kwargs)


@pytest.mark.parametrize("pipeline,queue_size,depth", [
    ("thread", None, 2), ("thread", 3, 3), ("inline", None, 4), ("thread", 1, 1)])
def test_a_thread_pipeline_on_the_cpu_queues_two_finished_batches_unless_told(random_store, pipeline, queue_size,
                                                                              depth):
    """Finished batches (the transfer runs in the producer thread on a CPU device) each hold their blocks:
    two in the queue by default; other modes keep four; ``queue_size`` always wins."""
    extra = {} if queue_size is None else {"queue_size": queue_size}
    loader = bgl.DataLoader(random_store, np.arange(100), bgl.NeighborSampler([2]), batch_size=10,
                            pipeline=pipeline, **extra)
    assert len(list(loader)) == 10
    assert loader._pipeline.queue_size == depth
    loader.close()


@pytest.mark.parametrize("fanouts", [[0], [-2, 3], [], 5, [1.5]])
def test_bad_fanouts_are_rejected(fanouts):
    with pytest.raises(ValueError, match="fanout"):
        bgl.NeighborSampler(fanouts)


def test_numpy_fanouts_are_named_as_plain_numbers():
    """numpy 2's repr names a scalar's type (``np.int64(-2)``); a user's message shows the number."""
    with pytest.raises(ValueError, match=r"got -2 in \[10, -2\]$"):
        bgl.NeighborSampler(np.array([10, -2]))


def test_a_live_cache_object_cannot_go_to_a_stage_process(random_store):
    from bgl.cache import make_cache

    cache = make_cache("fifo", 10, random_store.num_nodes, random_store.feat_dim)
    with pytest.raises(ValueError, match="policy name"):
        bgl.DataLoader(random_store, np.arange(10), bgl.NeighborSampler([2]), cache=cache, pipeline="processes")
    loader = bgl.DataLoader(random_store, np.arange(10), bgl.NeighborSampler([2]), cache=cache, batch_size=5)
    for inp, out, blocks in loader:
        check_batch(random_store, inp, out, blocks, [2])
    assert cache.stats()["requests"] > 0


def test_unreachable_servers_raise_before_any_process(free_port, spawned_children, random_store):
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(ServerUnavailable, match=address.replace(".", r"\.")):
        bgl.DataLoader([address], np.arange(10), bgl.NeighborSampler([2]), server_timeout=0.3,
                       pipeline="processes")
    assert not spawned_children()


def test_partition_dir_without_servers_says_what_to_set(tmp_path, monkeypatch):
    (tmp_path / "partition.json").write_text("{}")
    monkeypatch.delenv("BGL_SERVERS", raising=False)
    with pytest.raises(ValueError, match="BGL_SERVERS"):
        bgl.DataLoader(tmp_path, np.arange(10), bgl.NeighborSampler([2]))


def test_missing_store_dir_is_reported(tmp_path):
    with pytest.raises(bgl.StoreFormatError, match="does not exist"):
        bgl.DataLoader(tmp_path / "nope", np.arange(10), bgl.NeighborSampler([2]))
