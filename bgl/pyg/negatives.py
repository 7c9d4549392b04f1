"""PyG's link-loader inputs, shared by the ``Data`` and ``HeteroData`` link loaders: supervision pairs
(``edge_label_index``) checked, and PyG's negative sampling (``NegativeSampling``, its dict or mode string,
or ``neg_sampling_ratio``) as a bgl pair sampler drawn from the batch seed's stream."""
from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch


class PairNegatives:
    """PyG's negatives for ``b`` positive pairs: ``ceil(b * amount)`` of them.

    ``binary``: random source and random destination (two streams of one seed);
    ``triplet``: each positive's source ``amount`` times with random destinations.
    """

    def __init__(self, mode: str, amount: float):
        if mode not in ("binary", "triplet"):
            raise ValueError(f"neg_sampling mode must be 'binary' or 'triplet', got {mode!r}")
        if isinstance(amount, bool) or not isinstance(amount, (int, float, np.integer, np.floating)) \
                or not amount > 0:
            raise ValueError(f"neg_sampling amount must be > 0, got {amount!r}")
        if mode == "triplet" and float(amount) != int(amount):
            raise ValueError(f"triplet negative sampling needs an integer amount, got {amount!r}")
        self.mode, self.amount = mode, float(amount)

    def sample_pairs(self, src, dst, num_nodes: int, seed: int, graph=None) -> tuple[np.ndarray, np.ndarray]:
        from .. import negative_sampler as ns
        from ..sampler.ops import MASK64, splitmix64

        b = int(np.asarray(src).shape[0])
        if self.mode == "triplet":
            return ns.PerSourceUniform(int(self.amount)).sample_pairs(src, dst, num_nodes, seed)
        count = math.ceil(b * self.amount)
        ns.check_num_nodes(num_nodes)
        return (ns.uniform_draws(seed, 0, count, num_nodes),
                ns.uniform_draws(splitmix64(int(seed) & MASK64), 0, count, num_nodes))


def _negatives(neg_sampling, neg_sampling_ratio) -> Optional[PairNegatives]:
    if neg_sampling is not None and neg_sampling_ratio is not None:
        raise ValueError("give neg_sampling or neg_sampling_ratio, not both")
    if neg_sampling_ratio is not None:
        return None if neg_sampling_ratio == 0 else PairNegatives("binary", neg_sampling_ratio)
    if neg_sampling is None:
        return None
    if isinstance(neg_sampling, str):
        return PairNegatives(neg_sampling, 1.0)
    if isinstance(neg_sampling, dict):
        return PairNegatives(neg_sampling.get("mode"), neg_sampling.get("amount", 1))
    mode = getattr(neg_sampling, "mode", None)
    mode = getattr(mode, "value", mode)  # PyG's NegativeSamplingMode enum
    if any(getattr(neg_sampling, w, None) is not None for w in ("src_weight", "dst_weight")):
        raise ValueError("weighted negative sampling (NegativeSampling(src_weight= / dst_weight=)) "
                         "is not supported")
    return PairNegatives(mode, getattr(neg_sampling, "amount", 1))


def _check_label_index(edge_label_index, num_nodes: int) -> np.ndarray:
    ei = torch.as_tensor(edge_label_index)
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_label_index must be an int tensor [2, N], got shape {list(ei.shape)}")
    if torch.is_floating_point(ei) or ei.dtype == torch.bool:
        raise TypeError(f"edge_label_index must hold integer node ids, got dtype {ei.dtype}")
    arr = ei.detach().cpu().numpy().astype(np.int64)
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= num_nodes):
        bad = int(arr.min()) if int(arr.min()) < 0 else int(arr.max())
        raise ValueError(f"edge_label_index contains node id {bad}, outside [0, {num_nodes})")
    return arr


def check_edge_label(edge_label, n: int, negatives) -> Optional[torch.Tensor]:
    """``edge_label`` [n] of the pairs as PyG takes it (None: none given); with negatives, labels holding
    0 are shifted by one (0 then means "negative"), and triplet sampling takes none (PyG's rules)."""
    if edge_label is None:
        return None
    label = torch.as_tensor(edge_label)
    if label.shape[0] != n:
        raise ValueError(f"edge_label has {label.shape[0]} entries for {n} pairs in edge_label_index")
    if negatives is not None and negatives.mode == "triplet":
        raise ValueError("edge_label cannot be given with triplet negative sampling (PyG's rule)")
    if negatives is not None and label.numel() and int(label.min()) == 0:
        label = label + 1  # PyG: zero now means "negative"
    return label
