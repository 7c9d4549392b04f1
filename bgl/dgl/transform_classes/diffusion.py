"""DGL's graph diffusion objects: ``dgl.transforms.PPR``, ``HeatKernel``, ``GDC`` (a new graph of the diffusion
matrix's large entries) and ``SIGNDiffusion`` (diffused node features).

``PPR``, ``HeatKernel`` and ``GDC`` build the dense N x N diffusion matrix as DGL 2.1's do: 4 B per node pair
(float32) plus O(N^3) time for the inverse, the matrix exponential or the matrix powers, and a sort of all N^2
entries when the threshold comes from ``avg_degree``; for graphs of a few thousand nodes.  The new graph has an
edge ``u -> v`` for every entry ``S[v, u] >= eps``, in row-major order of ``S`` (by destination, then source),
its weight in ``edata[eweight_name]``, the node features shared.  ``HeatKernel`` of a graph that is not
bidirected calls ``torch.linalg.matrix_exp`` where DGL calls SciPy's ``expm`` (within float32 rounding).
``SIGNDiffusion`` is ``k`` rounds of message passing (O(k E F)).
"""
from __future__ import annotations

import torch

from bgl.dgl import function as fn
from bgl.dgl.base import DGLError
from bgl.dgl.heterograph import DGLGraph
from bgl.dgl.transform_classes.structural import _restructured
from bgl.dgl.transform_modules import BaseTransform, GCNNorm


class _Diffusion(BaseTransform):
    """What the three dense diffusions share: the weighted adjacency, the threshold, the new graph."""

    def __init__(self, eweight_name="w", eps=None, avg_degree=5):
        self.eweight_name, self.eps, self.avg_degree = eweight_name, eps, avg_degree

    def get_eps(self, num_nodes: int, mat: torch.Tensor):
        """``eps``, or the ``avg_degree * N``-th largest entry of ``mat`` (-inf when ``avg_degree > N``)."""
        if self.eps is not None:
            return self.eps
        if self.avg_degree > num_nodes:
            return float("-inf")
        return torch.sort(mat.flatten(), descending=True).values[self.avg_degree * num_nodes - 1]

    def _adjacency(self, g: DGLGraph, scale: float) -> torch.Tensor:
        """Dense float32 ``scale * A`` with ``A[v, u]`` the weight of edge ``u -> v`` (1 without weights)."""
        weight = g.edata[self.eweight_name] if self.eweight_name in g.edata else \
            torch.ones(g.num_edges(), dtype=torch.float32, device=g.device)
        n = g.num_nodes()
        mat = torch.zeros((n, n), dtype=torch.float32, device=g.device)
        src, dst = (t.long() for t in g.edges())
        mat[dst, src] = scale * weight
        return mat

    def _sparsified(self, g: DGLGraph, diff: torch.Tensor) -> DGLGraph:
        dst, src = (diff >= self.get_eps(g.num_nodes(), diff)).nonzero(as_tuple=False).t()
        out = _restructured(g, {g.canonical_etypes[0]: (src, dst)}, copy_edata=False)
        out.edata[self.eweight_name] = diff[dst, src]
        return out


class PPR(_Diffusion):
    """Personalized PageRank diffusion ``S = alpha (I - (1 - alpha) A)^-1``, then sparsified (dense: O(N^2)
    memory, O(N^3) time; see the module).

    Parameters
    ----------
    alpha : restart probability
    eweight_name : edge weights read (1 where absent) and written
    eps : keep entries ``>= eps``; None: the ``avg_degree * N`` largest (ties kept)
    avg_degree : the average in-degree kept when ``eps`` is None
    """

    def __init__(self, alpha=0.15, eweight_name="w", eps=None, avg_degree=5):
        super().__init__(eweight_name, eps, avg_degree)
        self.alpha = alpha

    def __call__(self, g: DGLGraph) -> DGLGraph:
        mat = self._adjacency(g, self.alpha - 1)
        nids = torch.arange(g.num_nodes(), device=g.device)
        mat[nids, nids] = mat[nids, nids] + 1
        return self._sparsified(g, self.alpha * torch.inverse(mat))


def is_bidirected(g: DGLGraph) -> bool:
    """Whether every edge ``u -> v`` has its ``v -> u`` (as many of them; weights not compared, as DGL's)."""
    src, dst = (t.long() for t in g.edges())
    n = g.num_nodes()
    forward, backward = torch.sort(src * n + dst).values, torch.sort(dst * n + src).values
    return bool(torch.equal(forward, backward))


class HeatKernel(_Diffusion):
    """Heat kernel diffusion ``S = exp(t (A - I))``, then sparsified (dense: O(N^2) memory, O(N^3) time; an
    eigendecomposition when the graph is bidirected, as DGL's).

    Parameters
    ----------
    t : diffusion time
    eweight_name, eps, avg_degree : as :class:`PPR`
    """

    def __init__(self, t=2.0, eweight_name="w", eps=None, avg_degree=5):
        super().__init__(eweight_name, eps, avg_degree)
        self.t = t

    def __call__(self, g: DGLGraph) -> DGLGraph:
        mat = self._adjacency(g, self.t)
        nids = torch.arange(g.num_nodes(), device=g.device)
        mat[nids, nids] = mat[nids, nids] - self.t
        if is_bidirected(g):
            e, v = torch.linalg.eigh(mat, UPLO="U")
            diff = v @ torch.diag(e.exp()) @ v.t()
        else:
            diff = torch.linalg.matrix_exp(mat)
        return self._sparsified(g, diff)


class GDC(_Diffusion):
    """Graph diffusion convolution ``S = sum_k coefs[k] A^k``, then sparsified (dense: O(N^2) memory,
    O(len(coefs) N^3) time).

    Parameters
    ----------
    coefs : ``theta_k``, one per power of ``A`` from ``A^0 = I``
    eweight_name, eps, avg_degree : as :class:`PPR`
    """

    def __init__(self, coefs, eweight_name="w", eps=None, avg_degree=5):
        super().__init__(eweight_name, eps, avg_degree)
        self.coefs = coefs

    def __call__(self, g: DGLGraph) -> DGLGraph:
        adj = self._adjacency(g, 1)
        mat = torch.eye(g.num_nodes(), device=g.device)
        diff = self.coefs[0] * mat
        for coef in self.coefs[1:]:
            mat = mat @ adj
            diff += coef * mat
        return self._sparsified(g, diff)


class SIGNDiffusion(BaseTransform):
    """SIGN's diffused features: ``ndata[f"{out_feat_name}_{i}"] = T^i X`` for ``i = 1 .. k`` (in place; returns
    ``g``), ``X = ndata[in_feat_name]`` and ``T`` by ``diffuse_op``: ``"raw"`` ``A`` (times the edge weights if
    ``eweight_name`` is set and present), ``"rw"`` ``D^-1 A``, ``"gcn"`` ``D^-1/2 A D^-1/2`` (:class:`GCNNorm`),
    ``"ppr"`` APPNP's ``(1 - alpha) T_gcn H + alpha X``.  Each step one ``update_all``: O(E F).

    Raises
    ------
    DGLError : an unknown ``diffuse_op``
    """

    def __init__(self, k, in_feat_name="feat", out_feat_name="out_feat", eweight_name=None, diffuse_op="raw",
                 alpha=0.2):
        if diffuse_op not in ("raw", "rw", "gcn", "ppr"):
            raise DGLError(f"Expect diffuse_op to be from ['raw', 'rw', 'gcn', 'ppr'], got {diffuse_op}")
        self.k, self.in_feat_name, self.out_feat_name = k, in_feat_name, out_feat_name
        self.eweight_name, self.diffuse_op, self.alpha = eweight_name, diffuse_op, alpha
        self.diffuse = getattr(self, diffuse_op)

    def __call__(self, g: DGLGraph) -> DGLGraph:
        for i, feat in enumerate(self.diffuse(g), start=1):
            g.ndata[f"{self.out_feat_name}_{i}"] = feat
        return g

    def _weighted(self, g: DGLGraph) -> bool:
        return self.eweight_name is not None and self.eweight_name in g.edata

    def raw(self, g: DGLGraph) -> list:
        out, name = [], self.in_feat_name
        with g.local_scope():
            message = fn.u_mul_e(name, self.eweight_name, "m") if self._weighted(g) else fn.copy_u(name, "m")
            for _ in range(self.k):
                g.update_all(message, fn.sum("m", name))
                out.append(g.ndata[name])
        return out

    def rw(self, g: DGLGraph) -> list:
        out, weighted = [], self._weighted(g)
        with g.local_scope():
            g.ndata["h"] = g.ndata[self.in_feat_name]
            if weighted:
                message, reduce = fn.u_mul_e("h", self.eweight_name, "m"), fn.sum("m", "h")
                g.update_all(fn.copy_e(self.eweight_name, "m"), fn.sum("m", "z"))
            else:
                message, reduce = fn.copy_u("h", "m"), fn.mean("m", "h")
            for _ in range(self.k):
                g.update_all(message, reduce)
                if weighted:
                    g.ndata["h"] = g.ndata["h"] / g.ndata["z"].reshape(g.num_nodes(), 1)
                out.append(g.ndata["h"])
        return out

    def _normalized(self, g: DGLGraph, restart: float) -> list:
        out, name = [], self.in_feat_name
        with g.local_scope():
            weight = self.eweight_name
            if weight is None:
                weight = "w"
                if weight in g.edata:
                    g.edata.pop(weight)
            GCNNorm(eweight_name=weight)(g)
            x = g.ndata[name]
            for _ in range(self.k):
                g.update_all(fn.u_mul_e(name, weight, "m"), fn.sum("m", name))
                if restart:
                    g.ndata[name] = (1 - restart) * g.ndata[name] + restart * x
                out.append(g.ndata[name])
        return out

    def gcn(self, g: DGLGraph) -> list:
        return self._normalized(g, 0.0)

    def ppr(self, g: DGLGraph) -> list:
        return self._normalized(g, self.alpha)
