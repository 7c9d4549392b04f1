"""Stage processes forked from the trainer's zygote (bgl/loader/pipeline/spawn.py): one zygote, the
trainer's environment at each start, and nothing left behind when the trainer is SIGKILLed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil

from bgl.loader.pipeline.spawn import StageProcess, zygote_pid

REPORT = "import os; open({path!r}, 'w').write(os.environ.get('BGL_ZYGOTE_TEST', '-') + ' ' + str(os.getppid()))"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_stages_fork_from_one_zygote_and_see_the_environment_of_their_start(tmp_path, monkeypatch):
    seen = []
    for k, value in enumerate(("first", "second")):
        monkeypatch.setenv("BGL_ZYGOTE_TEST", value)  # set after the zygote started, for the second stage
        out = tmp_path / f"report-{k}.txt"
        # exec as the target: a builtin, so nothing of this test module has to unpickle in the child
        proc = StageProcess(target=exec, args=(REPORT.format(path=str(out)),))
        proc.start()
        proc.join(timeout=60)
        assert proc.exitcode == 0
        seen.append(out.read_text().split())
    zygote = zygote_pid()
    assert zygote is not None and _alive(zygote)
    assert seen == [["first", str(zygote)], ["second", str(zygote)]]


KILLED_TRAINER = '''
import json, os, sys
import bgl
from bgl.loader.pipeline.spawn import zygote_pid
from bgl.store import GraphStore

if __name__ == "__main__":
    store = GraphStore(sys.argv[1])
    loader = bgl.DataLoader(store, store.train_idx, bgl.NeighborSampler([5, 5]), batch_size=16,
                            pipeline="processes")
    it = iter(loader)
    next(it)
    print(json.dumps({"stages": list(loader.stage_pids().values()), "zygote": zygote_pid()}), flush=True)
    sys.stdin.read()  # until killed
'''


def test_a_killed_trainer_leaves_no_stage_and_no_zygote(random_store, tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(KILLED_TRAINER)
    proc = subprocess.Popen([sys.executable, str(script), str(random_store.path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "DGLBACKEND": "pytorch"})
    pids: list[int] = []
    try:
        line = proc.stdout.readline()
        assert line, f"trainer printed nothing; stderr:\n{proc.stderr.read()}"
        report = json.loads(line)
        pids = [*report["stages"], report["zygote"]]
        assert len(report["stages"]) == 3 and all(_alive(p) for p in pids)
        assert all(psutil.Process(p).ppid() == report["zygote"] for p in report["stages"])
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)], "stage processes or their zygote outlived the trainer"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in pids:  # a failed run leaves no process behind either
            if _alive(p):
                psutil.Process(p).kill()
