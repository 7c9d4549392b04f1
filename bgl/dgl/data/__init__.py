"""``bgl.dgl.data``: DGL's dataset names without DGL (``dgl.data`` after ``import bgl.dgl as dgl``).

* :class:`CoraGraphDataset`, :class:`CiteseerGraphDataset`, :class:`PubmedGraphDataset`
  (:mod:`bgl.dgl.data.citation`): the graphs DGL 2.1 builds from the raw Planetoid files, read
  from a local folder; nothing is downloaded, and Cora needs no files at all (embedded copy).
* :func:`save_graphs`, :func:`load_graphs`, :func:`from_dgl` (:mod:`bgl.dgl.data.graph_files`):
  any other graph, moved out of an environment that still has DGL as one ``.npz`` file.
* :class:`AsNodePredDataset` (:mod:`bgl.dgl.data.adapter`): a labelled graph as a node-prediction task
  (``train_idx`` / ``val_idx`` / ``test_idx``).
* :class:`TUDataset` (:mod:`bgl.dgl.data.tu`): the TU graph-classification benchmarks from their raw text files.
* :mod:`bgl.dgl.data.utils`: DGL's ``dgl.data.utils`` helpers (``split_dataset``, ``save_tensors``, ``download`` of a file
  already in place, ...), nothing downloaded.
"""
from .adapter import AsNodePredDataset
from .citation import CitationGraphDataset, CiteseerGraphDataset, CoraGraphDataset, PubmedGraphDataset
from .graph_files import from_dgl, load_graphs, save_graphs
from .tu import TUDataset

__all__ = ["AsNodePredDataset", "CitationGraphDataset", "CoraGraphDataset", "CiteseerGraphDataset", "PubmedGraphDataset",
           "from_dgl", "load_graphs", "save_graphs", "TUDataset", "register_data_args", "load_data"]


def register_data_args(parser) -> None:
    """DGL's ``register_data_args``: the ``--dataset`` argument its example scripts read."""
    parser.add_argument("--dataset", type=str, required=False,
                        help="The input dataset. Can be cora, citeseer, pubmed, syn(synthetic dataset) or reddit")


def load_data(args):
    """DGL's ``load_data``: the citation dataset ``args.dataset`` names (Reddit and the synthetic sets are not built)."""
    datasets = {"cora": CoraGraphDataset, "citeseer": CiteseerGraphDataset, "pubmed": PubmedGraphDataset}
    if args.dataset in datasets:
        return datasets[args.dataset]()
    if args.dataset is not None and args.dataset.startswith("reddit"):
        from ..base import not_built

        raise not_built("RedditDataset", "save the graph with bgl.dgl.data.save_graphs and load_graphs it")
    raise ValueError("Unknown dataset: {}".format(args.dataset))

from . import utils  # noqa: E402  (``dgl.data.utils.X`` after ``import bgl.dgl as dgl``)
