"""DGL's node-embedding models trained on random walks (``dgl.nn.DeepWalk``, ``dgl.nn.MetaPath2Vec``).

Each holds two ``nn.Embedding`` tables (``node_embed``, ``context_embed``: DGL's parameter names, so a state
dict saved from DGL's model loads here), a ``sample`` method that a ``torch.utils.data.DataLoader`` uses as
its ``collate_fn`` (walks from a batch of start nodes, by :mod:`bgl.dgl.sampling`), and a ``forward`` that
returns the skip-gram loss with negative sampling, as DGL's computes it.
"""
from .deepwalk import DeepWalk
from .metapath2vec import MetaPath2Vec

__all__ = ["DeepWalk", "MetaPath2Vec"]
