"""DGL's transform objects for the positional encodings (``dgl.RandomWalkPE``, ``dgl.LapPE`` and its older
name ``dgl.LaplacianPE``): a dataset's ``transform=`` that stores the encoding as a node field of the
graph it is given (in place, as DGL's) and returns that graph."""
from __future__ import annotations

import warnings

from bgl.dgl.graph_encodings.spectral import lap_pe, random_walk_pe
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transform_modules import BaseTransform


class RandomWalkPE(BaseTransform):
    """``g.ndata[feat_name]``: :func:`random_walk_pe` of ``g`` with ``k`` steps, float32 [N, k]."""

    def __init__(self, k, feat_name="PE", eweight_name=None):
        self.k, self.feat_name, self.eweight_name = k, feat_name, eweight_name

    def __call__(self, g: DGLGraph) -> DGLGraph:
        g.ndata[self.feat_name] = random_walk_pe(g, k=self.k, eweight_name=self.eweight_name).to(g.device)
        return g


class LapPE(BaseTransform):
    """``g.ndata[feat_name]``: :func:`lap_pe` of ``g``, float32 [N, k]; with ``eigval_name``, also the
    eigenvalues, repeated for each node: float32 [N, k]."""

    def __init__(self, k, feat_name="PE", eigval_name=None, padding=False):
        self.k, self.feat_name, self.eigval_name, self.padding = k, feat_name, eigval_name, padding

    def __call__(self, g: DGLGraph) -> DGLGraph:
        if self.eigval_name:
            pe, eigval = lap_pe(g, k=self.k, padding=self.padding, return_eigval=True)
            g.ndata[self.eigval_name] = eigval.reshape(1, -1).repeat(g.num_nodes(), 1).to(g.device)
        else:
            pe = lap_pe(g, k=self.k, padding=self.padding)
        g.ndata[self.feat_name] = pe.to(g.device)
        return g


class LaplacianPE(LapPE):
    """DGL's older name of :class:`LapPE` (it warns that the name will go)."""

    def __init__(self, k, feat_name="PE", eigval_name=None, padding=False):
        super().__init__(k, feat_name, eigval_name, padding)
        warnings.warn("LaplacianPE will be deprecated. Use LapPE please.", UserWarning, stacklevel=2)
