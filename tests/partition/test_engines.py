"""The distributed engines' table (``bgl.partition.engines``): names, modes, checks, the CLI's choices.

No MPI needed: these are the checks every rank runs before reading data, and ``--help``.  The
engines themselves run in tests/partition/test_distributed_partition.py.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from bgl.partition import engines


def test_table_lists_both_engines_and_parhip_modes():
    assert engines.ENGINES == ("ptscotch", "parhip")
    assert engines._TABLE["parhip"].modes[0] == "fastsocial"  # the default: made for power-law graphs
    from bgl.partition import parhip_engine

    # every offered mode has ParHIP's constant; the eco presets (which did not finish) are not offered
    assert set(engines._TABLE["parhip"].modes) == set(parhip_engine.MODES)
    assert "ecosocial" not in engines.ALL_MODES and "ecomesh" not in engines.ALL_MODES


@pytest.mark.parametrize("engine, mode, want", [
    ("metis", None, "unknown distributed engine 'metis'; choose one of ptscotch, parhip"),
    ("ptscotch", "fastsocial", "--engine ptscotch has no modes; --engine-mode fastsocial applies to parhip"),
    ("parhip", "ecosocial", "--engine parhip has no mode 'ecosocial'; choose one of fastsocial, ultrafastsocial"),
])
def test_check_names_the_bad_engine_or_mode(engine, mode, want):
    with pytest.raises(ValueError, match="^" + want.replace("(", r"\(")):
        engines.check(engine, mode)


def test_a_missing_parhip_library_names_the_setup_script_and_where_it_looked(tmp_path, monkeypatch):
    from bgl.partition import parhip_engine

    monkeypatch.setenv("BGL_PARHIP_DIR", str(tmp_path))
    monkeypatch.setattr(parhip_engine, "_lib", None)  # not loaded yet in this process, as on a fresh rank
    with pytest.raises(engines.EngineMissing) as err:
        engines.check("parhip", None)
    text = str(err.value)
    assert "\n" not in text and f"no libparhip_interface.so in {tmp_path}" in text
    assert "$BGL_PARHIP_DIR" in text and ".ci/setup-parhip.sh" in text


@pytest.mark.parametrize("command", ["partition", "ingest"])
def test_help_lists_the_engines_without_loading_them(command):
    """``--engine`` / ``--engine-mode`` come from the table, and ``--help`` imports no engine, MPI or numba."""
    code = ("import sys\nfrom bgl.cli import main\n"
            f"try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('numba', 'mpi4py', 'bgl.partition.ptscotch', 'bgl.partition.parhip_engine', "
            "'bgl.partition.format') if m in sys.modules]\n"
            "print('HEAVY', heavy)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "{auto,ptscotch,parhip}" in text and "parhip: fastsocial, ultrafastsocial" in text
    assert "HEAVY []" in text


def test_auto_is_the_default_and_resolves_to_an_engine_every_rank_has(monkeypatch, mpi):
    """``--engine auto`` takes ParHIP where it loads on every rank, else PT-Scotch; a named engine is kept.
    One MPI rank (mpi4py's COMM_SELF) stands for the job; the libraries are made to load or not."""
    from mpi4py import MPI

    from bgl.commands.partition import add_engine_arguments
    from bgl.partition import parhip_engine, ptscotch

    import argparse

    p = argparse.ArgumentParser()
    add_engine_arguments(p)
    assert p.parse_args([]).engine == engines.AUTO
    assert engines.resolve("ptscotch", MPI.COMM_SELF) == "ptscotch"

    def missing():
        raise engines.EngineMissing("not here")

    monkeypatch.setattr(parhip_engine, "load", lambda: None)
    assert engines.resolve(engines.AUTO, MPI.COMM_SELF) == "parhip"
    monkeypatch.setattr(parhip_engine, "load", missing)
    monkeypatch.setattr(ptscotch, "load", lambda: None)
    assert engines.resolve(engines.AUTO, MPI.COMM_SELF) == "ptscotch"
    monkeypatch.setattr(ptscotch, "load", missing)
    assert engines.resolve(engines.AUTO, MPI.COMM_SELF) == "ptscotch"  # its check then names what to install


@pytest.mark.parametrize("command, flag", [("partition", "--balance"), ("ingest", "--balance"),
                                           ("partition", "--coarsen"), ("ingest", "--coarsen")])
def test_balance_applies_to_distributed_only(command, flag, random_store, tmp_path):
    """``--balance`` weighs the distributed engines' vertices and ``--coarsen`` shrinks their input; the
    one-machine paths refuse either in one line."""
    args = ([str(random_store.path), str(tmp_path / "out"), "--parts", "2"] if command == "partition"
            else [str(tmp_path / "edges.txt"), str(tmp_path / "out")])
    (tmp_path / "edges.txt").write_text("0 1\n1 2\n")
    done = subprocess.run([sys.executable, "-m", "bgl", command, *args, flag, "nodes" if flag == "--balance" else "on"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and f"{flag} applies to --distributed" in done.stderr, done.stderr[-2000:]
    assert not (tmp_path / "out").exists()
