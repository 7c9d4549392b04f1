"""Typed R-MAT (``bgl ingest rmat-hetero:SCALE``): an ogbn-mag-shaped graph of any size, generated chunk by chunk.

Node types (power-of-two counts, so every relation is an R-MAT square cut to its two types):

================  =================  ==========================================
``paper``         ``2**scale``       the target: synthetic features, labels, split
``author``        ``2**(scale-1)``   featureless
``field``         ``2**(scale-4)``   featureless (at least 1)
================  =================  ==========================================

Relations, ``edge_factor`` edges per paper in all (Graph500's 16 by default):
``(author, writes, paper)`` 1/4 of them, ``(paper, cites, paper)`` 5/8, ``(paper, has_topic,
field)`` 1/8.  Each relation is R-MAT with Graph500's a, b, c, d, drawn by the counter-based
kernel of :mod:`bgl.sources.rmat` (``_rmat_kernels.rmat_typed_edges``) with its own seed, so
any chunk regenerates identically on every pass of the typed builder and no edge list is ever
held: memory is the builder's (:mod:`bgl.sources.typed.csc`) plus 8 B per node of per-type id
permutations.  As for every typed input, edges are kept as drawn (repeated edges and
self-loops stay); ``add_reverse=True`` adds ``rev_writes`` / ``rev_has_topic`` and the
reversed citations, as ogbn-mag's R-GCN users do.  Paper labels are uniform over
``num_classes``, paper features ``centroid[label] + noise`` (:mod:`bgl.sources.synthetic`), and
the split is the seeded, label-stratified 60/20/20 of untyped stores.
"""
from __future__ import annotations

import numpy as np

from ...errors import IngestError
from .. import _rmat_kernels as K
from ..graph_source import FeatureFill
from ..rmat import CHUNK_EDGES, GRAPH500_ABCD, MAX_SCALE
from ..splits import stratified_split
from ..synthetic import fill_synthetic_features, synthetic_labels
from .source import TypedSource, schema_of

TARGET = "paper"
#: node type -> log2 count below the paper count
TYPE_SHIFTS = {"author": 1, "field": 4, "paper": 0}
#: canonical edge type -> its share of the edge factor, in eighths
RELATION_EIGHTHS = {("author", "writes", "paper"): 2, ("paper", "cites", "paper"): 5,
                    ("paper", "has_topic", "field"): 1}
MIN_SCALE = 4
DEFAULT_FEAT_DIM = 32
DEFAULT_NUM_CLASSES = 16


def _relation_stream(start_seed: int, m: int, scale_src: int, scale_dst: int, perm_src, perm_dst,
                     chunk_edges: int):
    scale = max(scale_src, scale_dst)
    a, b, c, _ = GRAPH500_ABCD

    def chunks():
        src = np.empty(min(chunk_edges, m), np.int64)
        dst = np.empty_like(src)
        for start in range(0, m, chunk_edges):
            count = min(chunk_edges, m - start)
            K.rmat_typed_edges(start, count, scale, scale - scale_src, scale - scale_dst, a, a + b, a + b + c,
                               start_seed, perm_src, perm_dst, src, dst)
            yield src[:count], dst[:count]

    return chunks


def rmat_hetero_source(scale: int, edge_factor: int = 16, seed: int = 0, *, feat_dim: int = 0,
                       num_classes: int = 0, chunk_edges: int = CHUNK_EDGES) -> TypedSource:
    """The :class:`TypedSource` of a typed R-MAT graph (layout in the module docstring).

    ``feat_dim`` / ``num_classes`` of the papers: 0 = the defaults (32 and 16).
    """
    if not MIN_SCALE <= int(scale) <= MAX_SCALE:
        raise IngestError(f"typed R-MAT scale must be in [{MIN_SCALE}, {MAX_SCALE}], got {scale}")
    if int(edge_factor) < 1:
        raise IngestError(f"typed R-MAT edge_factor must be >= 1, got {edge_factor}")
    if feat_dim < 0 or num_classes < 0:
        raise IngestError(f"feat_dim and num_classes must be >= 0, got {feat_dim} and {num_classes}")
    scale, edge_factor = int(scale), int(edge_factor)
    feat_dim = feat_dim or DEFAULT_FEAT_DIM
    num_classes = num_classes or DEFAULT_NUM_CLASSES
    scales = {nt: scale - shift for nt, shift in sorted(TYPE_SHIFTS.items())}
    counts = {nt: 1 << s for nt, s in scales.items()}
    perms = {nt: np.random.default_rng([seed, 0x5EED, i]).permutation(c).astype(np.int64)
             for i, (nt, c) in enumerate(counts.items())}
    papers = counts[TARGET]
    etypes = sorted(RELATION_EIGHTHS)
    relations, sizes = [], {}
    for r, (s, rel, d) in enumerate(etypes):
        m = max(1, edge_factor * papers * RELATION_EIGHTHS[(s, rel, d)] // 8)
        sizes[rel] = m
        relations.append(_relation_stream(seed * 64 + r + 1, m, scales[s], scales[d], perms[s], perms[d],
                                          chunk_edges))
    label = synthetic_labels(papers, num_classes, seed)
    feat = FeatureFill(dim=feat_dim, fill=lambda out: fill_synthetic_features(out, label, seed))
    return TypedSource(
        f"rmat-hetero-s{scale}-ef{edge_factor}", schema_of(counts, etypes), relations,
        feats={TARGET: feat}, labels={TARGET: label}, splits={TARGET: stratified_split(label, papers, seed)},
        num_edges_hint=sum(sizes.values()),
        extra={"source": f"rmat-hetero:{scale}", "format": "rmat-hetero", "scale": scale,
               "edge_factor": edge_factor, "abcd": list(GRAPH500_ABCD), "generated_edges": sizes, "seed": seed,
               "synthetic_features": True, "synthetic_labels": True, "split_source": "stratified-60/20/20"},
    )
