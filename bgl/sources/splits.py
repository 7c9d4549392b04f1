"""Default train/val/test splits for datasets that ship none."""
from __future__ import annotations

import numpy as np

from ..errors import IngestError

DEFAULT_FRACTIONS = (0.6, 0.2, 0.2)
SPLIT_NAMES = ("train", "val", "test")


def stratified_split(label: np.ndarray | None, num_nodes: int, seed: int = 0,
                     fractions: tuple[float, float, float] = DEFAULT_FRACTIONS) -> dict[str, np.ndarray]:
    """Seeded split of the labelled nodes, stratified by class.

    Parameters
    ----------
    label : int [num_nodes] (-1 = unlabelled, excluded) or None (all nodes, unstratified).
    fractions : (train, val, test), summing to 1; within each class the first
        ``round(train * size)`` nodes of a seeded permutation go to train, the
        next ``round(val * size)`` to val, the rest to test.

    Returns
    -------
    {"train": int64 [a], "val": int64 [b], "test": int64 [c]}, each sorted.
    Vectorised (one permutation and one stable argsort), so it scales to
    hundreds of millions of nodes.
    """
    if len(fractions) != 3 or min(fractions) < 0 or abs(sum(fractions) - 1.0) > 1e-6:
        raise IngestError(f"split fractions must be three values >= 0 summing to 1, got {fractions}")
    rng = np.random.default_rng(seed)
    if label is None:
        ids = rng.permutation(num_nodes).astype(np.int64)
        cls = np.zeros(num_nodes, np.int64)
    else:
        label = np.asarray(label)
        labelled = np.flatnonzero(label >= 0).astype(np.int64)
        ids = labelled[rng.permutation(labelled.size)]
        order = np.argsort(label[ids], kind="stable")
        ids = ids[order]
        cls = np.asarray(label[ids], np.int64)
    if ids.size == 0:
        return {name: np.zeros(0, np.int64) for name in SPLIT_NAMES}
    sizes = np.bincount(cls)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.arange(ids.size, dtype=np.int64) - starts[cls]
    n_train = np.round(sizes * fractions[0]).astype(np.int64)
    n_val = np.round(sizes * fractions[1]).astype(np.int64)
    in_train = rank < n_train[cls]
    in_val = ~in_train & (rank < (n_train + n_val)[cls])
    in_test = ~in_train & ~in_val
    return {"train": np.sort(ids[in_train]), "val": np.sort(ids[in_val]), "test": np.sort(ids[in_test])}


def mask_to_ids(mask) -> np.ndarray:
    """Boolean (or 0/1) mask [num_nodes] -> sorted int64 node ids."""
    return np.flatnonzero(np.asarray(mask).astype(bool)).astype(np.int64)
