"""A resumed run in a new process equals the uninterrupted run, whatever the script does to torch's RNG.

The script seeds torch at its top, builds the loader, drains k batches and saves; a new process seeds
torch the same way (or another way, and draws from it after ``load_state_dict``), builds, loads and
drains two epochs.  Every batch must equal the uninterrupted run's: the epoch orders come from the
loader's own generator, carried in the state (issue #56: the epoch after the resumed one used to repeat
epoch 0 when torch was seeded the same way).  Node, edge and typed seeds, ``set_epoch``, a PyG loader;
every pipeline.  This file is also the new process's script (``python <this file> <args>``).
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import torch

import bgl

REVERSE = {"rates": "rated-by", "rated-by": "rates"}
TORCH_SEED = 7


def make_loader(kind: str, paths: dict, pipeline: str):
    """The loader of ``kind`` over the stores at ``paths`` ({"plain": ..., "ratings": ...})."""
    if kind in ("nodes", "set_epoch"):
        return bgl.DataLoader(paths["plain"], torch.arange(250), bgl.NeighborSampler([3, 3]), batch_size=32,
                              shuffle=True, pipeline=pipeline)
    if kind == "edges":
        return bgl.DataLoader(paths["plain"], torch.arange(0, 1800, 3), bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler([3, 3]), exclude="self", negative_sampler=bgl.negative_sampler.Uniform(1)),
            batch_size=64, shuffle=True, pipeline=pipeline)
    if kind == "typed":
        from bgl.store import open_store

        ratings = open_store(paths["ratings"])
        rates = np.flatnonzero(np.asarray(ratings.etype) == ratings.schema.etype_id("rates"))
        return bgl.DataLoader(ratings, {"rates": rates}, bgl.as_edge_prediction_sampler(
            bgl.NeighborSampler([3, 3]), exclude="reverse_types", reverse_etypes=REVERSE,
            negative_sampler=bgl.negative_sampler.Uniform(1)), batch_size=40, shuffle=True, blocks="bgl",
            pipeline=pipeline)
    if kind == "pyg":
        from torch_geometric.data import Data

        from bgl.pyg import NeighborLoader

        gen = torch.Generator().manual_seed(0)
        data = Data(x=torch.randn(100, 4, generator=gen), edge_index=torch.randint(0, 100, (2, 600), generator=gen))
        return NeighborLoader(data, num_neighbors=[3, 2], batch_size=16, shuffle=True, pipeline=pipeline)
    raise ValueError(f"unknown kind {kind!r}")


def batch_key(kind: str, batch) -> list:
    """What identifies a batch: its seeds and its first layer's sampled nodes."""
    if kind == "pyg":
        return batch.n_id.tolist()
    blocks = batch[-1]
    return [blocks[-1].dst_ids.tolist(), blocks[0].src_ids.tolist()]


def drain(kind: str, loader, epochs: int, first_epoch: int = 0) -> list:
    """Keys of ``epochs`` epochs (``set_epoch`` called each one for that kind)."""
    keys = []
    for e in range(first_epoch, first_epoch + epochs):
        if kind == "set_epoch":
            loader.set_epoch(e)
        keys += [batch_key(kind, batch) for batch in loader]
    return keys


def resume(kind: str, paths: dict, pipeline: str, state: dict, torch_seed: int, draw_after: bool) -> list:
    """Seed torch, build, load ``state``, (optionally draw from torch), drain two epochs: their keys."""
    torch.manual_seed(torch_seed)
    loader = make_loader(kind, paths, pipeline)
    try:
        loader.load_state_dict(state)
        if draw_after:
            torch.rand(3)  # a model built after the loader, dropout ...
        first = state["epoch"] if kind == "set_epoch" else 0
        return drain(kind, loader, 2, first_epoch=first)
    finally:
        loader.close()


def main(spec_path: str, out_path: str) -> None:
    """Run every resume of the spec file; write {case name: keys} to ``out_path``."""
    with open(spec_path) as f:
        spec = json.load(f)
    out = {}
    for case in spec["cases"]:
        out[case["name"]] = resume(case["kind"], spec["paths"], spec["pipeline"], case["state"],
                                   case["torch_seed"], case["draw_after"])
    with open(out_path, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
else:
    import pytest

    @pytest.fixture(scope="module")
    def paths(tmp_path_factory):
        from bgl.sources.recsys import write_ratings_store
        from bgl.store import write_store

        rng = np.random.default_rng(3)
        n, deg = 300, 6
        indptr = np.arange(0, n * deg + 1, deg, dtype=np.int64)
        indices = rng.integers(0, n, n * deg).astype(np.int32)
        root = tmp_path_factory.mktemp("resume")
        write_store(root / "plain", indptr, indices, feat=rng.random((n, 8), dtype=np.float32),
                    label=rng.integers(0, 3, n), num_classes=3)
        write_ratings_store(root / "ratings", num_users=60, num_items=40, clusters=4)
        return {"plain": str(root / "plain"), "ratings": str(root / "ratings")}

    def _first_run(kind, paths, pipeline, stop_after=None):
        """Seed torch as a script does at its top, build, drain (3 epochs, or ``stop_after`` batches of
        epoch 0, then the state as JSON would carry it)."""
        torch.manual_seed(TORCH_SEED)
        loader = make_loader(kind, paths, pipeline)
        try:
            if stop_after is None:
                return drain(kind, loader, 3)
            if kind == "set_epoch":
                loader.set_epoch(0)
            it = iter(loader) if stop_after else None
            for _ in range(stop_after):
                next(it)
            return json.loads(json.dumps(loader.state_dict()))  # while the epoch's iterator lives
        finally:
            loader.close()

    @pytest.mark.parametrize("pipeline", ["inline", "thread", pytest.param("processes", marks=pytest.mark.extended)])
    def test_a_resumed_run_in_a_new_process_equals_the_uninterrupted_run(paths, pipeline, tmp_path):
        kinds = ["nodes", "edges", "typed", "set_epoch", "pyg"] if pipeline == "inline" else ["nodes", "edges",
                                                                                               "typed"]
        cases, expected = [], {}
        for kind in kinds:
            whole = _first_run(kind, paths, pipeline)
            n = len(whole) // 3
            stops = [0, 3, n // 2, n] if pipeline == "inline" else [n // 2]
            if kind == "set_epoch":  # with set_epoch the script says which epoch comes after a whole one
                stops = stops[:-1]
            for k in stops:
                state = _first_run(kind, paths, pipeline, stop_after=k)
                # two epochs from batch k of epoch 0 (k == n: the state sits between epochs 0 and 1)
                want = whole[k:2 * n] if k < n else whole[n:3 * n]
                for torch_seed, draw_after in [(TORCH_SEED, False), (TORCH_SEED + 1, True)]:
                    name = f"{kind}-k{k}-seed{torch_seed}"
                    cases.append({"name": name, "kind": kind, "state": state, "torch_seed": torch_seed,
                                  "draw_after": draw_after})
                    expected[name] = want
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"paths": paths, "pipeline": pipeline, "cases": cases}))
        out = tmp_path / "out.json"
        done = subprocess.run([sys.executable, __file__, str(spec), str(out)], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        got = json.loads(out.read_text())
        wrong = [name for name in expected if got[name] != expected[name]]
        assert not wrong, wrong
