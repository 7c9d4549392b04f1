"""What the untyped and typed DistDGL importers share (:mod:`.importer`, :mod:`.typed`)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from bgl.errors import PartitionFormatError

METHOD = "distdgl-import"
SPLIT_MASKS = {"train": ("train_mask",), "val": ("val_mask", "valid_mask"), "test": ("test_mask",)}
FEAT_CHUNK_ROWS = 1 << 20


def load_part_graph(cfg: dict, cfg_path: Path, k: int, load_graphs):
    """``(DGL part graph, its file name)`` of part ``k``; PartitionFormatError naming an unreadable file."""
    where = str(cfg_path.parent / cfg[f"part-{k}"]["part_graph"])
    try:
        return load_graphs(where)[0][0], where
    except Exception as err:  # DGL raises its own DGLError for unreadable files
        raise PartitionFormatError(f"{where}: cannot read DGL part graph: {err}") from None


def inner_in_edges(graph, dgl, s: int, e: int, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, keep)``: global (shuffled) ids of the in-edges of a part's inner nodes, which must be
    exactly ``[s, e)``, and the bool mask of those edges among the part graph's."""
    nid = graph.ndata[dgl.NID].numpy().astype(np.int64)
    inner = graph.ndata["inner_node"].numpy().astype(bool)
    if not np.array_equal(np.sort(nid[inner]), np.arange(s, e, dtype=np.int64)):
        raise PartitionFormatError(f"{where}: inner nodes are not exactly the ids [{s}, {e}) of node_map")
    src, dst = (t.numpy() for t in graph.edges())
    keep = inner[dst]
    return nid[src[keep]], nid[dst[keep]], keep


def import_meta(cfg: dict, cfg_path: Path, version: int, orig_note: str, parts: list, total_edges: int,
                cut: int) -> dict:
    """The ``partition.json`` of an imported DistDGL partition (after checking the config's edge count)."""
    from ..format import FORMAT_NAME

    if "num_edges" in cfg and int(cfg["num_edges"]) != total_edges:
        raise PartitionFormatError(f"{cfg_path}: parts hold {total_edges} in-edges of their inner nodes, "
                                   f"the config says num_edges={cfg['num_edges']} (halo edges missing?)")
    return {"format": FORMAT_NAME, "version": version, "method": METHOD,
            "params": {"part_config": str(cfg_path.resolve()), "dgl_part_method": cfg.get("part_method"),
                       "graph_name": cfg.get("graph_name"), "orig_ids": orig_note},
            "num_parts": int(cfg["num_parts"]), "num_nodes": int(cfg["num_nodes"]), "num_edges": total_edges,
            "source_store": str(cfg_path.resolve()), "parts": parts,
            "metrics": {"edge_cut": cut / total_edges if total_edges else 0.0}}


def publish(work, out: Path, meta: dict, overwrite: bool) -> None:
    """Write ``partition.json`` into the work dir, check the whole partition opens, rename it into place."""
    import json

    from bgl.output_dir import PARTITION, replace_output

    from ..format import META_FILE, open_partition

    (work.path / META_FILE).write_text(json.dumps(meta, indent=2))
    open_partition(work.path)  # never rename an inconsistent partition into place
    replace_output(work, out, PARTITION, overwrite)
