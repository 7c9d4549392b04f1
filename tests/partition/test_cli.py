"""``bgl partition`` end to end through the CLI entry point."""
from __future__ import annotations

import json

from bgl.cli import main


def test_cli_partitions_and_prints_metrics(planted, tmp_path, capsys):
    out = tmp_path / "p"
    rc = main(["partition", "--method", "bgl", "--parts", "2", "--num-batches", "4", str(planted.path), str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    meta = json.loads((out / "partition.json").read_text())
    assert f"{meta['metrics']['edge_cut']:.4f}" in text
    assert "remote-sample share" in text and "peak RSS" in text
    assert meta["num_parts"] == 2 and meta["method"] == "bgl"


def test_cli_refuses_existing_output_and_bad_parts(planted, tmp_path, capsys):
    out = tmp_path / "p"
    out.mkdir()
    assert main(["partition", "--method", "random", "--parts", "2", str(planted.path), str(out)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["partition", "--method", "random", "--parts", "2", "--overwrite", "--num-batches", "0",
                 str(planted.path), str(out)]) == 0
    assert main(["partition", "--method", "metis", "--parts", "0", str(planted.path), str(tmp_path / "q")]) == 1
    assert "num_parts must be an int >= 1, got 0" in capsys.readouterr().err
    assert main(["partition", "--method", "bgl", "--parts", "2", str(tmp_path / "missing"), str(tmp_path / "r")]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_cli_memory_budget_refusal_names_the_numbers(planted, tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["partition", "--method", "bgl", "--parts", "2", "--memory-budget", "10M", "--num-batches", "0",
                 str(planted.path), str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("bgl partition: error: ") and err.count("\n") == 1
    assert "memory budget of" in err and "--memory-budget" in err
    assert not out.exists()
    assert main(["partition", "--method", "kaminpar", "--parts", "2", "--memory-budget", "2G", "--num-batches",
                 "0", str(planted.path), str(out)]) == 0
    assert json.loads((out / "partition.json").read_text())["method"] == "kaminpar"
    capsys.readouterr()
    assert main(["partition", "--method", "bgl", "--parts", "2", "--memory-budget", "lots", str(planted.path),
                 str(tmp_path / "q")]) == 2
    err = capsys.readouterr().err
    assert "not a memory size" in err and err.count("\n") == 1
