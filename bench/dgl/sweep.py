"""Which of DGL 2.1's own example scripts run on bgl.dgl with only their import lines changed -> a results table.

Where ``bench/dgl/examples.py`` times a few scripts side by side with DGL, this runs many, once each, on
the current stack (``.venv-current-3.13``: newest torch, no DGL): every ``.py`` of the example's folder is
copied into a scratch dir with its ``dgl`` import lines made ``bgl.dgl``'s (``examples.to_bgl_imports``)
and nothing else changed, and the script runs with the arguments of :data:`SWEEP` (a citation dataset,
which bgl.dgl reads with no download: Cora is embedded; fewer epochs where the script takes them).
Printed per script: ``ran`` / ``failed`` / ``port`` (an import line with no one-line bgl.dgl form), the
seconds, and the script's last line of output (its metric) or of its error.  A script that fails on what is
not DGL's (scikit-learn missing in the venv, a CUDA-only device line) is reported as such, not hidden.

    python bench/dgl/sweep.py --dgl-checkout /work/.mirror/dmlc+dgl/repo [--only gcn gat] [--out FILE.md]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.<area>.<script> imports
from bench.dgl.examples import CURRENT_PYTHON, read_dgl_script, stack_env, to_bgl_imports  # noqa: E402

# (path in DGL's repo, arguments): the examples that train on a citation graph (Cora here)
SWEEP = (
    ("examples/pytorch/appnp/train.py", "--dataset cora --n-epochs 20"),
    ("examples/pytorch/arma/citation.py", "--dataset Cora --epochs 2"),  # 100 trials, hard-coded
    ("examples/pytorch/dagnn/main.py", "--dataset Cora --epochs 20"),
    ("examples/pytorch/dgi/train.py", "--dataset cora --n-dgi-epochs 20 --n-classifier-epochs 20"),
    ("examples/pytorch/gat/train.py", "--dataset cora"),
    ("examples/pytorch/gatv2/train.py", "--dataset cora --epochs 20"),
    ("examples/pytorch/gcn/train.py", "--dataset cora"),
    ("examples/pytorch/grand/main.py", "--dataname cora --epochs 20"),
    ("examples/pytorch/graphsage/train_full.py", "--dataset cora"),
    ("examples/pytorch/hardgat/train.py", "--dataset cora --epochs 20"),
    ("examples/pytorch/jknet/main.py", "--dataset Cora --epochs 20"),
    ("examples/pytorch/label_propagation/main.py", "--dataset Cora"),
    ("examples/pytorch/mixhop/main.py", "--dataset Cora --epochs 2"),  # 100 trials, hard-coded
    ("examples/pytorch/monet/citation.py", "--dataset cora --n-epochs 20"),
    ("examples/pytorch/ogc/train.py", "--dataset cora"),
    ("examples/pytorch/sgc/sgc.py", "--dataset cora --n-epochs 20"),
    ("examples/pytorch/tagcn/train.py", "--dataset cora --n-epochs 20"),
    ("examples/pytorch/vgae/train.py", "--datasrc dgl --dataset cora --epochs 20"),
    ("examples/sparse/appnp.py", ""),
    ("examples/sparse/c_and_s.py", ""),
    ("examples/sparse/gat.py", ""),
    ("examples/sparse/gcn.py", ""),
    ("examples/sparse/gcnii.py", ""),
    ("examples/sparse/hgnn.py", ""),
    ("examples/sparse/hypergraphatt.py", ""),
    ("examples/sparse/pagerank.py", ""),
    ("examples/sparse/sgc.py", ""),
    ("examples/sparse/sign.py", ""),
    ("examples/sparse/twirls.py", ""),
)


def folder_files(checkout: Path, rev: str, script: str) -> list[str]:
    """The ``.py`` files of ``script``'s folder (a work tree's, or a git dir's at ``rev``)."""
    folder = Path(script).parent
    if (checkout / folder).is_dir():
        return [str(folder / p.name) for p in sorted((checkout / folder).glob("*.py"))]
    listing = subprocess.run(["git", "--git-dir", str(checkout), "ls-tree", "--name-only", f"{rev}:{folder}"],
                             check=True, capture_output=True, text=True).stdout.split()
    return [str(folder / name) for name in listing if name.endswith(".py")]


def port_folder(checkout: Path, rev: str, script: str, dest: Path) -> str | None:
    """Copy the script's folder into ``dest`` with bgl.dgl imports; the reason when a file cannot be ported."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in folder_files(checkout, rev, script):
        text = read_dgl_script(checkout, rev, path)
        try:
            text = to_bgl_imports(text)
        except ValueError as e:
            return f"{Path(path).name}: {e}"
        (dest / Path(path).name).write_text(text)
    return None


def run_one(python: Path, folder: Path, script: str, args: str, env: dict, timeout: float) -> tuple[str, float, str]:
    """(status, seconds, last line of output) of one ported script."""
    start = time.perf_counter()
    try:
        done = subprocess.run([str(python), Path(script).name, *args.split()], cwd=folder, env=env, text=True,
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, ""
    ok = done.returncode == 0
    lines = [line.strip() for line in (done.stdout if ok else done.stderr).splitlines() if line.strip()]
    return ("ran" if ok else "failed"), time.perf_counter() - start, (lines[-1] if lines else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dgl-checkout", type=Path, required=True, help="DGL work tree or git dir")
    p.add_argument("--rev", default="v2.1.0")
    p.add_argument("--python", type=Path, default=CURRENT_PYTHON, help="the stack the ported scripts run on")
    p.add_argument("--only", nargs="*", help="script paths (substring match)")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--out", type=Path, default=None, help="also write the table here (markdown)")
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bgl-dgl-sweep-") as tmp:
        scratch = Path(tmp)
        env = stack_env(scratch, "bgl.dgl")
        env.pop("BGL_EXAMPLES_DGL", None)
        for script, script_args in SWEEP:
            if args.only and not any(o in script for o in args.only):
                continue
            folder = scratch / script.replace("/", "_")
            why = port_folder(args.dgl_checkout, args.rev, script, folder)
            status, seconds, last = ("port", 0.0, why) if why else run_one(args.python, folder, script, script_args,
                                                                            env, args.timeout)
            rows.append((script, script_args, status, seconds, last))
            print(f"{status:8s} {seconds:6.1f} s  {script} {script_args} :: {last[:160]}", flush=True)
    table = ["| script (DGL 2.1) | arguments | result | s | last line |", "|---|---|---|---|---|"]
    table += [f"| `{s}` | `{a}` | {st} | {sec:.0f} | {last[:140].replace('|', '/')} |" for s, a, st, sec, last in rows]
    ran = sum(1 for r in rows if r[2] == "ran")
    summary = f"{ran} of {len(rows)} ran with only their dgl import lines changed ({args.python})"
    print(summary)
    if args.out:
        args.out.write_text("\n".join([summary, "", *table, ""]))
    return 0 if ran == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
