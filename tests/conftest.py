"""Shared fixtures: small real and synthetic graph stores, built once per session.

Also the suite's two order-proofing tools:

- ``process_state_guard`` (autouse): a test that leaves ``os.environ``, the working
  directory, the CPU affinity or torch's/numba's thread counts changed fails, naming what
  changed, and the state is put back so the next test starts clean;
- ``--shuffle SEED``: run modules, and the tests inside each module, in a seeded random
  order (``make test`` keeps the fixed order; the README names the seeds that pass).

and ``--strict-suite`` (``make test`` passes it): the run fails when a test was skipped for a reason
outside :data:`ALLOWED_SKIPS` (a skip CI never notices is a test CI never runs: issue #56), or when
the run left a new entry in the temp directory (``/tmp``; pytest's own ``pytest-of-*`` aside).
"""
from __future__ import annotations

import os
import re
import random
import tempfile

import numpy as np
import pytest

pytest_plugins = ("pytester",)  # tests/test_process_guard.py runs an inner suite through it

os.environ.setdefault("DGLBACKEND", "pytorch")

from bgl.store import GraphStore, write_store  # noqa: E402
from bgl.loader.pipeline.chain import quiet_numba_threads  # noqa: E402


def _load_suite_schedule():
    """tests/suite_schedule.py: how ``make test`` spreads a lane's files over its workers."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("suite_schedule", Path(__file__).with_name("suite_schedule.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite_schedule = _load_suite_schedule()

# numba's OpenMP layer spin-waits next to torch's and slows model training ~8x on a
# 2-core box; choose numba's workqueue layer once, before any test or fixture runs a kernel.
quiet_numba_threads()


def pytest_addoption(parser):
    parser.addoption("--shuffle", type=int, default=None, metavar="SEED",
                     help="run test modules, and tests within each module, in a random order seeded by SEED")
    parser.addoption("--strict-suite", action="store_true", default=False,
                     help="fail the run on a skip outside the allowed reasons, or on a new entry left in /tmp")


# The only reasons a test may skip under --strict-suite (docs/resume-and-first-run.md, "The test suite"):
# no GPU here; DGL absent (the current-stack lane); another Python version; a README or docs block its
# author marked not to run.  Each is (what the reason says, whether it holds in this process).
def _dgl_absent() -> bool:
    import importlib.util

    return importlib.util.find_spec("dgl") is None


ALLOWED_SKIPS = (
    (re.compile(r"CUDA|GPU|UVA", re.I), lambda: True),
    (re.compile(r"\bDGL\b|'dgl'|\bdgl\b", re.I), _dgl_absent),
    (re.compile(r"current-stack lane"), lambda: not _dgl_absent()),  # a lane's own test, in the other lane
    (re.compile(r"Python \d"), lambda: True),
    (re.compile(r"^(README\.md|docs/[\w./-]+\.md):\d+: not run"), lambda: True),  # a docs block marked so
)


def unexpected_skip(reason: str) -> bool:
    """True when ``reason`` (a skip's message) is none of :data:`ALLOWED_SKIPS`."""
    return not any(pattern.search(reason) and holds() for pattern, holds in ALLOWED_SKIPS)


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


_SYSTEM_TEMP = tempfile.gettempdir()  # read before pytest_configure points TMPDIR under pytest's basetemp


# DGL's bundled libxsmm keeps lock files at /tmp/.libxsmm.* (seen made there during a lane whose TMPDIR
# pointed elsewhere; made once a machine, then reused): not the suite's leftovers.
_NOT_OURS = ("pytest-of-", ".libxsmm.")


def _temp_entries() -> set:
    return {name for name in os.listdir(_SYSTEM_TEMP) if not name.startswith(_NOT_OURS)}


_strict: dict = {}  # under --strict-suite: the temp dir's entries at the start, the unexpected skips


@pytest.hookimpl(trylast=True)  # after pytest's tmp_path plugin made its factory
def pytest_configure(config):
    # under pytest-xdist (make test: -n 2) the controller checks: it sees every worker's reports, and a
    # worker's look at /tmp could catch the other worker's test mid-way
    if config.getoption("--strict-suite", default=False) and not hasattr(config, "workerinput"):
        _strict.update(temp_before=_temp_entries(), skips=[])
    _temp_dir_under_basetemp(config)
    _torch_inductor_cache_dir()


def _torch_inductor_cache_dir() -> None:
    """Set ``TORCHINDUCTOR_CACHE_DIR`` once, before any test, as torch's inductor does on its first use.

    On newer torch, importing ``torch_geometric`` sets it (``torch._inductor``'s ``cache_dir()``): a
    full run imports PyG while collecting, but a test that imports it first in its own process (a subset
    run, e.g. ``test_resume_new_process.py`` alone) failed the process-state guard for a library's
    one-time setting.  Setting it here (under TMPDIR, set just before) leaves every test the same start."""
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except Exception:  # an older torch (the pinned lane's) or none: nothing sets it on import
        return
    cache_dir()


def _temp_dir_under_basetemp(config) -> None:
    """Point TMPDIR (this process's and every child's: torchrun's ``torchelastic_*``, multiprocessing's
    ``pymp-*``, the launcher's agents) at ``<basetemp>/tmp``: what a killed process leaves there goes
    with pytest's own rotation of its base temp dirs instead of piling up in /tmp.  Set once, before
    any test, so the process-state guard sees it unchanged."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None or hasattr(config, "workerinput"):
        return
    temp = factory.getbasetemp() / "tmp"
    temp.mkdir(exist_ok=True)
    os.environ["TMPDIR"] = str(temp)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def pytest_runtest_logreport(report):
    if _strict and report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        if unexpected_skip(reason):
            _strict["skips"].append(f"{report.nodeid}: {reason}")


def pytest_collectreport(report):
    """A module skipped at collection (``importorskip`` at its top) counts as its tests' skip."""
    pytest_runtest_logreport(report)


def pytest_sessionfinish(session, exitstatus):
    if not _strict:
        return
    problems = [f"skipped outside the allowed reasons: {s}" for s in _strict["skips"]]
    left = sorted(_temp_entries() - _strict["temp_before"])
    if left:
        problems.append(f"left in {_SYSTEM_TEMP}: {', '.join(left)}")
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in ["--strict-suite:", *problems]:
            if reporter is not None:
                reporter.write_line(line, red=True)
        if session.exitstatus == 0:
            session.exitstatus = 1


def pytest_collection_modifyitems(config, items):
    seed = config.getoption("--shuffle")
    if seed is None:
        if hasattr(config, "workerinput"):
            suite_schedule.heaviest_first(items)
        return
    rng = random.Random(seed)
    modules: dict[str, list] = {}
    for item in items:  # group by file so module-scoped fixtures are still built once per module
        modules.setdefault(str(item.path), []).append(item)
    order = list(modules)
    rng.shuffle(order)
    shuffled = []
    for name in order:
        group = modules[name]
        rng.shuffle(group)
        shuffled.extend(group)
    items[:] = shuffled


def pytest_xdist_make_scheduler(config, log):
    """``make test`` runs each lane on two pytest-xdist workers (``-n 2 --dist loadfile``): a file's tests
    stay on one worker (module fixtures built once), files that share a system resource run on the same
    one, the heaviest first (``suite_schedule``)."""
    if config.getoption("dist") == "loadfile" and config.getoption("--shuffle") is None:
        return suite_schedule.scheduler(config, log)
    return None


def pytest_report_header(config):
    seed = config.getoption("--shuffle")
    return None if seed is None else f"test order shuffled with seed {seed}"


def _thread_counts() -> dict[str, int]:
    import torch

    counts = {"torch threads": torch.get_num_threads()}
    try:
        import numba

        counts["numba threads"] = numba.get_num_threads()
    except Exception:  # numba missing or its threading layer unavailable: nothing to watch
        pass
    return counts


def _set_thread_counts(counts: dict[str, int]) -> None:
    import torch

    torch.set_num_threads(counts["torch threads"])
    if "numba threads" in counts:
        import numba

        numba.set_num_threads(counts["numba threads"])


# pytest itself rewrites this one around every test phase
_PYTEST_OWNED_ENV = ("PYTEST_CURRENT_TEST",)


def _process_state() -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in _PYTEST_OWNED_ENV}
    state = {"environ": environ, "cwd": os.getcwd(), **_thread_counts()}
    if hasattr(os, "sched_getaffinity"):
        state["cpu affinity"] = sorted(os.sched_getaffinity(0))
    return state


def _describe_changes(before: dict, after: dict) -> list[str]:
    changes = []
    env_b, env_a = before["environ"], after["environ"]
    for key in sorted(set(env_b) | set(env_a)):
        if env_b.get(key) != env_a.get(key):
            changes.append(f"os.environ[{key!r}]: {env_b.get(key, '<unset>')!r} -> {env_a.get(key, '<unset>')!r}")
    for key in sorted(k for k in before if k != "environ"):
        if before[key] != after.get(key):
            changes.append(f"{key}: {before[key]!r} -> {after.get(key)!r}")
    return changes


def _restore(before: dict) -> None:
    for key in [k for k in os.environ if k not in before["environ"] and k not in _PYTEST_OWNED_ENV]:
        del os.environ[key]
    os.environ.update(before["environ"])
    os.chdir(before["cwd"])
    if "cpu affinity" in before:
        os.sched_setaffinity(0, before["cpu affinity"])
    _set_thread_counts(before)


@pytest.fixture(autouse=True)
def process_state_guard(request):
    """Fail the test that leaves the process changed (environment, cwd, affinity, thread counts).

    numba re-reads ``NUMBA_*`` variables at its next first-time compile and refuses a changed
    ``NUMBA_NUM_THREADS`` once its pool runs, so one leaking test used to break unrelated
    kernels' tests much later, depending on order and on numba's on-disk cache.  Catching the
    leak where it happens, and putting the state back, keeps failures where they belong.
    """
    before = _process_state()
    yield
    changes = _describe_changes(before, _process_state())
    if changes:
        _restore(before)
        pytest.fail(f"{request.node.nodeid} left the process changed: " + "; ".join(changes), pytrace=False)


def random_csc(num_nodes: int, avg_degree: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random directed graph as CSC (in-neighbours), no self-loops or duplicates."""
    rng = np.random.default_rng(seed)
    m = int(num_nodes * avg_degree)
    src = rng.integers(0, num_nodes, m)
    dst = rng.integers(0, num_nodes, m)
    keep = src != dst
    key = np.unique(dst[keep].astype(np.int64) * num_nodes + src[keep])
    dst, src = key // num_nodes, key % num_nodes
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return indptr, src


def make_random_store(path, num_nodes=500, avg_degree=8.0, feat_dim=16, num_classes=4,
                      seed=0, train_frac=0.6) -> GraphStore:
    """A synthetic store with features, labels and a train/val/test split."""
    rng = np.random.default_rng(seed)
    indptr, indices = random_csc(num_nodes, avg_degree, seed)
    feat = rng.standard_normal((num_nodes, feat_dim)).astype(np.float32)
    label = rng.integers(0, num_classes, num_nodes)
    perm = rng.permutation(num_nodes)
    a, b = int(train_frac * num_nodes), int((train_frac + (1 - train_frac) / 2) * num_nodes)
    splits = {"train": np.sort(perm[:a]), "val": np.sort(perm[a:b]), "test": np.sort(perm[b:])}
    return write_store(path, indptr, indices, feat=feat, label=label, splits=splits,
                       num_classes=num_classes, name=f"random-{num_nodes}")


@pytest.fixture(scope="session")
def random_store(tmp_path_factory) -> GraphStore:
    """500 nodes, ~8 in-edges each, 16-dim float32 features, 4 classes."""
    return make_random_store(tmp_path_factory.mktemp("stores") / "random")


@pytest.fixture(scope="session")
def cora_store(tmp_path_factory) -> GraphStore:
    """The embedded default dataset (Cora), ingested once per session."""
    from bgl.data import default_dataset_path
    from bgl.sources.datasets import ingest

    return ingest(str(default_dataset_path()), tmp_path_factory.mktemp("stores") / "cora")


@pytest.fixture(scope="session")
def random_store_factory(tmp_path_factory):
    """Call ``factory(num_nodes=..., avg_degree=..., feat_dim=..., num_classes=..., seed=...)``
    to get a fresh synthetic store in its own temp directory."""
    def factory(**kwargs) -> GraphStore:
        return make_random_store(tmp_path_factory.mktemp("stores") / "random", **kwargs)

    return factory


HETERO_ETYPES = [("author", "writes", "paper"), ("paper", "cites", "paper"), ("paper", "in", "venue"),
                 ("paper", "by", "author")]


def make_hetero_store(path, seed: int = 0) -> GraphStore:
    """A random typed store: papers (float32 features, labels, train/val splits), authors (float16
    features), venues (none), four relations with duplicate and parallel edges."""
    from bgl.sources.hetero import schema_of, write_typed_store

    rng = np.random.default_rng(seed)
    counts = {"paper": 300, "author": 200, "venue": 20}
    rel = [(rng.integers(0, counts[s], 900), rng.integers(0, counts[d], 900)) for s, _, d in HETERO_ETYPES]
    perm = rng.permutation(counts["paper"])
    return write_typed_store(
        path, schema_of(counts, HETERO_ETYPES), rel,
        feats={"paper": rng.standard_normal((300, 8)).astype(np.float32),
               "author": rng.standard_normal((200, 3)).astype(np.float16)},
        labels={"paper": rng.integers(0, 4, 300)},
        splits={"paper": {"train": np.sort(perm[:150]), "val": np.sort(perm[150:200])}}, name="hetero")


@pytest.fixture(scope="session")
def hetero_store(tmp_path_factory) -> GraphStore:
    """:func:`make_hetero_store` (520 nodes of 3 types, 3,600 edges of 4 relations)."""
    return make_hetero_store(tmp_path_factory.mktemp("stores") / "hetero")


def typed_edges(block, ids_map) -> dict:
    """{(dst, relation): sorted src ids} of a one-layer typed block, ids mapped through ``ids_map``."""
    src, dst = ids_map[block.src_ids.numpy()], ids_map[block.dst_ids.numpy()]
    ptr, idx, et = block.indptr.numpy(), block.indices.numpy(), block.etypes.numpy()
    out: dict = {}
    for j in range(dst.size):
        for p in range(ptr[j], ptr[j + 1]):
            out.setdefault((int(dst[j]), int(et[p])), []).append(int(src[idx[p]]))
    return {key: sorted(v) for key, v in out.items()}


INSTALLED_DIRS = ("bgl", "sampler", "cache", "partition", "launch", "data", "examples")


@pytest.fixture(scope="session")
def source_tree(tmp_path_factory):
    """A copy of what a wheel is built from (the installed folders, pyproject.toml, README.md): a
    build there leaves the checkout without build/ or egg-info, and no stale build/lib in the wheel."""
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.tmp", "*.egg-info")
    for name in INSTALLED_DIRS:
        shutil.copytree(repo / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.cfg", "MANIFEST.in"):
        if (repo / name).exists():
            shutil.copy2(repo / name, src / name)
    return src


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def free_port():
    """Call it for a TCP port on 127.0.0.1 that is free right now (servers, rendezvous, sshd)."""
    return _free_port
