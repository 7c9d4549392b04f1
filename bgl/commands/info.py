"""``bgl info STORE``: counts, degree statistics, features, classes and splits of a graph store."""
from __future__ import annotations

import argparse
import json


def register(subparsers) -> None:
    """Add the ``info`` parser (describe a graph store) to ``subparsers``."""
    p = subparsers.add_parser(
        "info", help="describe a graph store",
        description="Print node/edge counts, in-degree min/mean/max, feature dim, classes and split sizes.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("store", help="graph store directory")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--validate", choices=("auto", "full", "none"), default="auto",
                   help="index-range check when opening the store")
    p.set_defaults(func=run)


def store_summary(store) -> dict:
    """:meth:`GraphStore.summary` plus how the edges were stored: ``symmetrized`` and why."""
    extra = store.meta.extra
    return {**store.summary(), "symmetrized": extra.get("symmetrize"),
            "symmetrize_from": extra.get("symmetrize_from"), "header_direction": extra.get("header_direction"),
            "schema": store.meta.schema, "csc_build": extra.get("csc_build"),
            "dropped": extra.get("dropped"), "kept": extra.get("kept"),
            "type_codecs": {nt: c.name for nt, c in (getattr(store, "type_feat_codec", None) or {}).items()}}


def _typed_lines(schema: dict, build: dict | None, codecs: dict | None = None) -> list[str]:
    """One line per node type (count, features and the codec its rows are stored with, classes, splits)
    and per edge type (count)."""
    lines, codecs = [], codecs or {}
    for t in schema["node_types"]:
        parts = [f"{t['count']:,}"]
        if t.get("feat_dim"):
            stored = f", stored as {codecs[t['name']]}" if t["name"] in codecs else ""
            parts.append(f"feat {t['feat_dim']} ({t['feat_dtype']}{stored})")
        if t.get("has_label"):
            parts.append(f"{t['num_classes']} classes")
        if t.get("splits"):
            parts.append(", ".join(f"{k}={v}" for k, v in t["splits"].items()))
        lines.append(f"node type    {t['name']}: " + "  ".join(parts))
    for e in schema["edge_types"]:
        lines.append(f"edge type    ({e['src']}, {e['rel']}, {e['dst']}): {e['count']:,}")
    if build:
        lines.append(f"built        {build['store_bytes_per_edge']} B per edge stored, "
                     f"{build['build_bytes_per_edge']} B per edge while building ({build['buckets']} bucket(s))")
    return lines


def _direction_line(s: dict) -> str | None:
    if s.get("symmetrized") is None:
        return None
    what = "symmetrized (every edge stored both ways)" if s["symmetrized"] else "as given (direction kept)"
    why = s.get("symmetrize_from")
    if why == "header":
        why = f"file header says {s['header_direction']}"
    elif why == "option":
        why = "--symmetrize" if s["symmetrized"] else "--no-symmetrize"
        if s.get("header_direction"):
            why += f", overriding the header ({s['header_direction']})"
    return f"direction    {what}" + (f"  [{why}]" if why else "")


def _dropped_line(s: dict) -> str | None:
    """What ingest left out of the input's edges (untyped) or kept of them (typed stores keep all);
    stores written before these counts were recorded have neither."""
    for key in ("dropped", "kept"):
        counts = s.get(key)
        if counts:
            loops, dups = counts["self_loops"], counts["duplicates"]
            why = ("  [a typed graph keeps every edge as given]" if key == "kept" else
                   "  [duplicates counted per stored direction]" if s.get("symmetrized") and dups else "")
            return (f"{key:<13}{loops:,} self-loop{'s' * (loops != 1)}, {dups:,} duplicate "
                    f"edge{'s' * (dups != 1)}{why}")
    return None


def _edge_array_text(name: str, spec: dict) -> str:
    """``w (float32)`` / ``feat (float32 x 16)``: an edge array's name, dtype and width."""
    width = spec["shape"][1:]
    return f"{name} ({spec['dtype']}{' x ' + 'x'.join(map(str, width)) if width else ''})"


def format_summary(s: dict) -> str:
    """Human-readable lines for :meth:`GraphStore.summary`."""
    splits = ", ".join(f"{k}={v}" for k, v in s["splits"].items()) or "none"
    feat = f"{s['feat_dim']} ({s['feat_dtype']})" if s["feat_dim"] else "none"
    if s.get("feat_codec"):
        feat += f", stored as {s['feat_codec']['name']} (bgl/codec)"
    lines = [
        f"store        {s['path']}" + (f"  [{s['name']}]" if s["name"] else ""),
        f"nodes        {s['num_nodes']:,}",
        f"edges        {s['num_edges']:,}",
        f"in-degree    min {s['in_degree_min']}  mean {s['in_degree_mean']:.2f}  max {s['in_degree_max']}",
        f"features     {feat}",
        f"classes      {s['num_classes'] or 'none'}",
        f"splits       {splits}",
    ]
    if s.get("edata"):
        lines.append("edge data    " + ", ".join(_edge_array_text(k, v) for k, v in s["edata"].items()))
    if s.get("ndata"):
        lines.append("node data    " + ", ".join(_edge_array_text(k, v) for k, v in s["ndata"].items()))
    edges_line = _dropped_line(s)
    if edges_line:
        lines.insert(3, edges_line)
    direction = _direction_line(s)
    if direction:
        lines.insert(3, direction)
    if s.get("schema"):  # per-type lines replace the untyped features / classes / splits
        lines = [ln for ln in lines if not ln.startswith(("features ", "classes ", "splits "))]
        lines += _typed_lines(s["schema"], s.get("csc_build"), s.get("type_codecs"))
    if s["node_offset"] or s["global_num_nodes"] != s["num_nodes"]:
        lines.append(f"part         owns ids [{s['node_offset']}, {s['node_offset'] + s['num_nodes']}) "
                     f"of {s['global_num_nodes']:,}")
    return "\n".join(lines)


def run(args) -> int:
    """Print the summary of a graph store; return the exit code (0 = printed)."""
    from ..store import GraphStore

    summary = store_summary(GraphStore(args.store, validate=args.validate))
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0
