"""DGL's TWIRLS layers (Yang et al., 2021, "Graph Neural Networks Inspired by Classical Iterative
Algorithms"): ``TWIRLSUnfoldingAndAttention`` (gradient steps of a graph-regularised least-squares energy,
optionally reweighted by IRLS attention) and ``TWIRLSConv`` (MLP, unfolding, MLP); ``bgl.dgl.nn``
re-exports them.
"""
from .conv import TWIRLSConv
from .unfolding import TWIRLSUnfoldingAndAttention

__all__ = ["TWIRLSConv", "TWIRLSUnfoldingAndAttention"]
