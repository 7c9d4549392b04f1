"""DGL's explainers (``dgl.nn.pytorch.explain``) on ``bgl.dgl`` graphs: :class:`GNNExplainer` and
:class:`HeteroGNNExplainer` (:mod:`.gnnexplainer`), :class:`PGExplainer` and :class:`HeteroPGExplainer`
(:mod:`.pgexplainer`)."""
from .gnnexplainer import GNNExplainer, HeteroGNNExplainer
from .pgexplainer import HeteroPGExplainer, PGExplainer

__all__ = ["GNNExplainer", "HeteroGNNExplainer", "PGExplainer", "HeteroPGExplainer"]
