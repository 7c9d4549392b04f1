"""DGL's explainers (``dgl.nn.pytorch.explain``) on ``bgl.dgl`` graphs: :class:`GNNExplainer` and
:class:`HeteroGNNExplainer` (:mod:`.gnnexplainer`)."""
from .gnnexplainer import GNNExplainer, HeteroGNNExplainer

__all__ = ["GNNExplainer", "HeteroGNNExplainer"]
