"""DGL's ``AsNodePredDataset``: any dataset whose graph has node labels, seen as a node-prediction
task with ``train_idx`` / ``val_idx`` / ``test_idx`` (DGL's GraphSAGE example reads these).

The graph is cloned (structure shared, feature dicts copied) so the wrapped dataset is left as it
was.  Nothing is saved to disk, unlike DGL's (which caches the split under ``save_dir``): the split
costs one pass over the masks.
"""
from __future__ import annotations

import numpy as np
import torch


class AsNodePredDataset:
    """DGL 2.1's ``dgl.data.AsNodePredDataset`` over ``bgl.dgl`` datasets.

    Parameters
    ----------
    dataset : a dataset whose ``dataset[0]`` is a graph with ``label`` on ``target_ntype`` (and, when
        ``split_ratio`` is None, bool ``train_mask`` / ``val_mask`` / ``test_mask``); an OGB-style dataset
        (``get_idx_split()``, ``dataset[0] == (graph, label)``) is read as DGL reads it
    split_ratio : (train, val, test) fractions: new masks from a shuffle of ``np.random`` (as DGL's)
    target_ntype : the node type to predict on a typed graph
    **kwargs : DGL's ``DGLDataset`` arguments (``raw_dir``, ``save_dir``, ``force_reload``, ``verbose``,
        ``transform``): accepted; only ``transform`` acts (on ``dataset[0]``)

    Attributes
    ----------
    train_idx, val_idx, test_idx : int64 [n_*] node ids of the target type
    num_classes : the wrapped dataset's ``num_classes``, else the number of distinct labels

    Raises
    ------
    ValueError : no ``label``, a missing mask without ``split_ratio``, or a ratio that is not three numbers
    """

    def __init__(self, dataset, split_ratio=None, target_ntype=None, **kwargs):
        self.dataset, self.split_ratio, self.target_ntype = dataset, split_ratio, target_ntype
        self._transform = kwargs.get("transform")
        self.verbose = bool(kwargs.get("verbose", True))
        if hasattr(dataset, "get_idx_split"):
            g, label = dataset[0]
            self.g = g.clone()
            self.g.ndata["label"] = torch.as_tensor(label).reshape(g.num_nodes())
        else:
            self.g = dataset[0].clone()
        data = self.g.nodes[target_ntype].data
        if "label" not in data:
            raise ValueError(f"AsNodePredDataset: the graph has no 'label' on node type {target_ntype!r}")
        if split_ratio is None:
            if hasattr(dataset, "get_idx_split"):
                self._masks_from_ids(dataset.get_idx_split())
            for mask in ("train_mask", "val_mask", "test_mask"):
                if mask not in data:
                    raise ValueError(f"AsNodePredDataset: {mask} is not provided; pass split_ratio to make the masks")
        else:
            self._masks_from_ratio(split_ratio)
        self.train_idx = torch.nonzero(data["train_mask"], as_tuple=True)[0]
        self.val_idx = torch.nonzero(data["val_mask"], as_tuple=True)[0]
        self.test_idx = torch.nonzero(data["test_mask"], as_tuple=True)[0]
        self.num_classes = getattr(dataset, "num_classes", None)
        if self.num_classes is None:
            self.num_classes = int(torch.unique(data["label"]).numel())

    def _masks_from_ids(self, split: dict) -> None:
        n = self.g.num_nodes(self.target_ntype)
        for key, mask in (("train", "train_mask"), ("valid", "val_mask"), ("test", "test_mask")):
            flags = torch.zeros(n, dtype=torch.bool)
            flags[torch.as_tensor(split[key]).long()] = True
            self.g.nodes[self.target_ntype].data[mask] = flags

    def _masks_from_ratio(self, ratio) -> None:
        if len(ratio) != 3:
            raise ValueError(f"Split ratio must be a float triplet but got {ratio}.")
        n = self.g.num_nodes(self.target_ntype)
        order = np.arange(n)
        np.random.shuffle(order)
        n_train, n_val, n_test = (int(n * r) for r in ratio)
        parts = (order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:n_train + n_val + n_test])
        for ids, mask in zip(parts, ("train_mask", "val_mask", "test_mask")):
            flags = torch.zeros(n, dtype=torch.bool)
            flags[torch.from_numpy(ids)] = True
            self.g.nodes[self.target_ntype].data[mask] = flags

    @property
    def name(self) -> str:
        return f"{getattr(self.dataset, 'name', 'dataset')}-as-nodepred"

    def __getitem__(self, idx: int):
        if idx != 0:
            raise IndexError(f"AsNodePredDataset holds one graph; index {idx} is out of range")
        return self.g if self._transform is None else self._transform(self.g)

    def __len__(self) -> int:
        return 1
