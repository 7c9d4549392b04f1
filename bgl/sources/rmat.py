"""R-MAT graph generator (Chakrabarti et al. 2004, Graph500 parameters) writing a store in chunks.

``2**scale`` nodes and ``edge_factor * 2**scale`` generated edges, drawn with
the Graph500 quadrant probabilities a=0.57, b=0.19, c=0.19, d=0.05 and node
ids relabelled by a seeded permutation.  Graph500 graphs are undirected, so
the store is symmetrized by default; self-loops and repeated edges are
dropped (``num_edges`` is therefore below ``2 * edge_factor * 2**scale``).

Edges are never materialised: the counter-based kernel regenerates the same
chunk stream for the counting and the fill pass of ``bgl.sources.csc_build``, so
peak memory is the CSC being built plus a few ``num_nodes`` arrays (measured
in ``bench/ingest/store_build.py``).  Graph500's per-level noise is not applied.
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import IngestError
from ..store import GraphStore
from . import _rmat_kernels as K
from .graph_source import GraphSource, write_source

GRAPH500_ABCD = (0.57, 0.19, 0.19, 0.05)
CHUNK_EDGES = 1 << 21  # generated edges per chunk: two 16 MiB int64 buffers
MAX_SCALE = 40


def parse_rmat_source(text: str, name: str = "rmat") -> int:
    """``"rmat:SCALE"`` (or ``"<name>:SCALE"``) -> SCALE."""
    try:
        scale = int(text.split(":", 1)[1])
    except (IndexError, ValueError):
        raise IngestError(f"R-MAT source must look like '{name}:SCALE', got {text!r}") from None
    return scale


def rmat_source(scale: int, edge_factor: int = 16, seed: int = 0, *,
                abcd: tuple[float, float, float, float] = GRAPH500_ABCD,
                chunk_edges: int = CHUNK_EDGES) -> GraphSource:
    """A :class:`GraphSource` whose edge stream is generated on demand, chunk by chunk."""
    if not 1 <= int(scale) <= MAX_SCALE:
        raise IngestError(f"R-MAT scale must be in [1, {MAX_SCALE}], got {scale}")
    if int(edge_factor) < 1:
        raise IngestError(f"R-MAT edge_factor must be >= 1, got {edge_factor}")
    a, b, c, d = (float(x) for x in abcd)
    if min(a, b, c, d) < 0 or abs(a + b + c + d - 1.0) > 1e-9:
        raise IngestError(f"R-MAT probabilities must be >= 0 and sum to 1, got {abcd}")
    scale, edge_factor = int(scale), int(edge_factor)
    n = 1 << scale
    m = edge_factor * n
    perm = np.random.default_rng([seed, 0x5EED]).permutation(n).astype(np.int64)

    def chunks():
        src = np.empty(min(chunk_edges, m), np.int64)
        dst = np.empty_like(src)
        for start in range(0, m, chunk_edges):
            count = min(chunk_edges, m - start)
            K.rmat_edges(start, count, scale, a, a + b, a + b + c, seed, perm, src, dst)
            yield src[:count], dst[:count]

    return GraphSource(
        name=f"rmat-s{scale}-ef{edge_factor}", num_nodes=n, edges=chunks, num_edges_hint=m,
        symmetrize_default=True,
        extra={"source": f"rmat:{scale}", "format": "rmat", "scale": scale, "edge_factor": edge_factor,
               "abcd": [a, b, c, d], "generated_edges": m},
    )


def generate_rmat_store(out_dir: str | os.PathLike, scale: int, edge_factor: int = 16, seed: int = 0,
                        feat_dim: int = 0, num_classes: int = 0, *,
                        abcd: tuple[float, float, float, float] = GRAPH500_ABCD,
                        symmetrize: bool = True, remove_self_loops: bool = True, dedupe: bool = True,
                        overwrite: bool = False, progress: bool = False,
                        chunk_edges: int = CHUNK_EDGES) -> GraphStore:
    """Generate an R-MAT graph straight into a store directory.

    Parameters
    ----------
    scale : log2 of the node count.
    edge_factor : generated edges per node.
    feat_dim, num_classes : seeded synthetic features / labels (0 = none); the
        store always gets a seeded 60/20/20 split (stratified when labelled).

    Returns
    -------
    GraphStore
        the store just written, opened.
    """
    src = rmat_source(scale, edge_factor, seed, abcd=abcd, chunk_edges=chunk_edges)
    return write_source(src, out_dir, feat_dim=feat_dim, num_classes=num_classes, symmetrize=symmetrize,
                        remove_self_loops=remove_self_loops, dedupe=dedupe, seed=seed,
                        overwrite=overwrite, progress=progress)
