"""DGL's explainers (``dgl.nn.pytorch.explain``) on ``bgl.dgl`` graphs: :class:`GNNExplainer` and
:class:`HeteroGNNExplainer` (:mod:`.gnnexplainer`), :class:`PGExplainer` and :class:`HeteroPGExplainer`
(:mod:`.pgexplainer`), :class:`SubgraphX` and :class:`HeteroSubgraphX` (:mod:`.subgraphx`)."""
from .gnnexplainer import GNNExplainer, HeteroGNNExplainer
from .pgexplainer import HeteroPGExplainer, PGExplainer
from .subgraphx import HeteroSubgraphX, SubgraphX

__all__ = ["GNNExplainer", "HeteroGNNExplainer", "PGExplainer", "HeteroPGExplainer", "SubgraphX", "HeteroSubgraphX"]
