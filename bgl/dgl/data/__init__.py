"""``bgl.dgl.data``: DGL's dataset names without DGL (``dgl.data`` after ``import bgl.dgl as dgl``).

* :class:`CoraGraphDataset`, :class:`CiteseerGraphDataset`, :class:`PubmedGraphDataset`
  (:mod:`bgl.dgl.data.citation`): the graphs DGL 2.1 builds from the raw Planetoid files, read
  from a local folder; nothing is downloaded, and Cora needs no files at all (embedded copy).
* :func:`save_graphs`, :func:`load_graphs`, :func:`from_dgl` (:mod:`bgl.dgl.data.graph_files`):
  any other graph, moved out of an environment that still has DGL as one ``.npz`` file.
* :class:`AsNodePredDataset` (:mod:`bgl.dgl.data.adapter`): a labelled graph as a node-prediction task
  (``train_idx`` / ``val_idx`` / ``test_idx``); :class:`AsGraphPredDataset`: graphs and labels as a
  graph-prediction task.
* :class:`TUDataset` (:mod:`bgl.dgl.data.tu`): the TU graph-classification benchmarks from their raw text files.
* :class:`DGLDataset`, :class:`DGLBuiltinDataset` (:mod:`bgl.dgl.data.dgl_dataset`): the base class users
  subclass, DGL's ``has_cache`` / ``load`` / ``download`` / ``process`` / ``save`` protocol, nothing downloaded.
* :class:`RedditDataset` (:mod:`bgl.dgl.data.reddit`): GraphSAGE's Reddit graph from DGL's raw files.
* :class:`GINDataset` (:mod:`bgl.dgl.data.gin`): the GIN paper's graph-classification sets from their text files;
  :class:`LegacyTUDataset` (:mod:`bgl.dgl.data.legacy_tu`): the TU files as DGL's older examples read them.
* :class:`PPIDataset` (:mod:`bgl.dgl.data.ppi`): GAT's PPI graphs from DGL's JSON and ``.npy`` files.
* :class:`FB15k237Dataset`, :class:`FB15kDataset`, :class:`WN18Dataset` (:mod:`bgl.dgl.data.knowledge_graph`):
  R-GCN's link-prediction graphs from the triplet files.
* GNNExplainer's generated graphs (:mod:`bgl.dgl.data.synthetic`: ``BAShapeDataset``, ``BACommunityDataset``,
  ``TreeCycleDataset``, ``TreeGridDataset``) and ``KarateClubDataset``, ``MiniGCDataset``, ``SBMMixtureDataset``
  (:mod:`bgl.dgl.data.generated`): DGL's algorithms call for call, so a seed gives DGL's graph.
* Single-graph benchmarks from DGL's raw files: CoraFull, Amazon co-buy, Coauthor, WikiCS, Flickr, Yelp
  (:mod:`bgl.dgl.data.benchmark_files`); the heterophilous and Geom-GCN graphs (:mod:`bgl.dgl.data.heterophily`).
* :class:`CSVDataset` (:mod:`bgl.dgl.data.csv_dataset`): graphs from ``meta.yaml`` and CSV files (pandas, PyYAML).
* :class:`AsLinkPredDataset` and the split helpers ``add_nodepred_split``, ``mask_nodes_by_property``,
  ``add_node_property_split``: DGL's splits for the same NumPy state.
* QM9 / QM9Edge / QM7b (:mod:`bgl.dgl.data.molecules`), BitcoinOTC / GDELT / ICEWS18 (:mod:`bgl.dgl.data.temporal`),
  the fraud graphs, FakeNews and ZINC / CLUSTER / PATTERN (:mod:`bgl.dgl.data.labelled_sets`; the last three from
  DGL's ``.bin`` files rewritten in bgl's format) from DGL's raw files; ``LegacyPPIDataset``.
* The RDF datasets (``AIFBDataset``, ``MUTAGDataset``, ``BGSDataset``, ``AMDataset``) and ``BA2MotifDataset``
  (a pickle file only) are refused in one line, as are the other datasets DGL reads only from pickles
  (``CoraBinary``, ``MovieLensDataset``, the superpixel sets) or through nltk (``SST``).
* :mod:`bgl.dgl.data.utils`: DGL's ``dgl.data.utils`` helpers (``split_dataset``, ``save_tensors``, ``download`` of a file
  already in place, ...), nothing downloaded.
"""
from .adapter import AsGraphPredDataset, AsLinkPredDataset, AsNodePredDataset
from .benchmark_files import (AmazonCoBuy, AmazonCoBuyComputerDataset, AmazonCoBuyPhotoDataset, Coauthor,
                              CoauthorCSDataset, CoauthorPhysicsDataset, CoraFull, CoraFullDataset, FlickrDataset,
                              GNNBenchmarkDataset, WikiCSDataset, YelpDataset)
from .citation import CitationGraphDataset, CiteseerGraphDataset, CoraGraphDataset, PubmedGraphDataset
from .csv_dataset import CSVDataset
from .dgl_dataset import DGLBuiltinDataset, DGLDataset
from .generated import KarateClub, KarateClubDataset, MiniGCDataset, SBMMixture, SBMMixtureDataset
from .gin import GINDataset
from .graph_files import from_dgl, load_graphs, save_graphs
from .heterophily import (ActorDataset, AmazonRatingsDataset, ChameleonDataset, CornellDataset, GeomGCNDataset,
                          HeterophilousGraphDataset, MinesweeperDataset, QuestionsDataset, RomanEmpireDataset,
                          SquirrelDataset, TexasDataset, TolokersDataset, WisconsinDataset)
from .knowledge_graph import FB15k237Dataset, FB15kDataset, KnowledgeGraphDataset, WN18Dataset
from .labelled_sets import (CLUSTERDataset, FakeNewsDataset, FraudAmazonDataset, FraudDataset, FraudYelpDataset,
                            PATTERNDataset, ZINCDataset)
from .legacy_tu import LegacyTUDataset
from .molecules import QM7b, QM7bDataset, QM9, QM9Dataset, QM9Edge, QM9EdgeDataset
from .ppi import LegacyPPIDataset, PPIDataset
from .reddit import RedditDataset
from .synthetic import BACommunityDataset, BAShapeDataset, TreeCycleDataset, TreeGridDataset
from .temporal import GDELT, ICEWS18, BitcoinOTC, BitcoinOTCDataset, GDELTDataset, ICEWS18Dataset
from .tu import TUDataset
from .utils import (Subset, add_node_property_split, add_nodepred_split, check_sha1, download, extract_archive,
                    get_download_dir, load_tensors, loadtxt, mask_nodes_by_property, save_tensors, split_dataset)

__all__ = ["AsNodePredDataset", "AsGraphPredDataset", "CitationGraphDataset", "CoraGraphDataset", "CiteseerGraphDataset",
           "PubmedGraphDataset",
           "from_dgl", "load_graphs", "save_graphs", "TUDataset", "register_data_args", "load_data",
           "DGLDataset", "DGLBuiltinDataset", "RedditDataset", "GINDataset", "LegacyTUDataset",
           "PPIDataset", "KnowledgeGraphDataset", "FB15k237Dataset", "FB15kDataset", "WN18Dataset",
           "BAShapeDataset", "BACommunityDataset", "TreeCycleDataset", "TreeGridDataset", "KarateClubDataset",
           "KarateClub", "MiniGCDataset", "SBMMixtureDataset", "SBMMixture", "GNNBenchmarkDataset", "CoraFullDataset",
           "AmazonCoBuyComputerDataset", "AmazonCoBuyPhotoDataset", "CoauthorCSDataset", "CoauthorPhysicsDataset",
           "WikiCSDataset", "FlickrDataset", "YelpDataset", "HeterophilousGraphDataset", "RomanEmpireDataset",
           "AmazonRatingsDataset", "MinesweeperDataset", "TolokersDataset", "QuestionsDataset", "GeomGCNDataset",
           "ChameleonDataset", "SquirrelDataset", "CornellDataset", "TexasDataset", "WisconsinDataset", "ActorDataset",
           "AsLinkPredDataset", "CSVDataset", "add_nodepred_split", "mask_nodes_by_property", "add_node_property_split",
           "CoraFull", "AmazonCoBuy", "Coauthor", "Subset", "check_sha1", "download", "extract_archive",
           "get_download_dir", "load_tensors", "loadtxt", "save_tensors", "split_dataset", "QM9", "QM9Dataset",
           "QM9Edge", "QM9EdgeDataset", "QM7b", "QM7bDataset", "BitcoinOTC", "BitcoinOTCDataset", "GDELT",
           "GDELTDataset", "ICEWS18", "ICEWS18Dataset", "FraudDataset", "FraudYelpDataset", "FraudAmazonDataset",
           "FakeNewsDataset", "ZINCDataset", "CLUSTERDataset", "PATTERNDataset", "LegacyPPIDataset"]

# DGL's RDF entity-classification datasets parse RDF with rdflib, which bgl does not depend on
_RDF = ("AIFBDataset", "MUTAGDataset", "BGSDataset", "AMDataset")
# DGL 2.1 reads these only from pickle files, which bgl never unpickles
_PICKLED = {"CoraBinary": "pmpds.pkl", "MovieLensDataset": "movie_feat.pkl",
            "MNISTSuperPixelDataset": "mnist_75sp_<split>.pkl", "CIFAR10SuperPixelDataset": "cifar10_150sp_<split>.pkl"}


def register_data_args(parser) -> None:
    """DGL's ``register_data_args``: the ``--dataset`` argument its example scripts read."""
    parser.add_argument("--dataset", type=str, required=False,
                        help="The input dataset. Can be cora, citeseer, pubmed, syn(synthetic dataset) or reddit")


def load_data(args):
    """DGL's ``load_data``: the citation dataset or the Reddit graph (``reddit``, ``reddit-self-loop``)
    ``args.dataset`` names."""
    datasets = {"cora": CoraGraphDataset, "citeseer": CiteseerGraphDataset, "pubmed": PubmedGraphDataset}
    if args.dataset in datasets:
        return datasets[args.dataset]()
    if args.dataset is not None and args.dataset.startswith("reddit"):
        return RedditDataset(self_loop="self-loop" in args.dataset)
    raise ValueError("Unknown dataset: {}".format(args.dataset))


def __getattr__(name: str):
    if name == "BA2MotifDataset":
        from ..base import not_built

        raise not_built("dgl.data.BA2MotifDataset", "DGL 2.1 reads BA-2motif only from a pickle file (BA-2motif.pkl), "
                        "which bgl never unpickles: convert it where DGL imports and move it with from_dgl",
                        attribute=True)
    if name in _PICKLED:
        from ..base import not_built

        raise not_built(f"dgl.data.{name}", f"DGL 2.1 reads it from a pickle file ({_PICKLED[name]}), which bgl never "
                        "unpickles: load it where DGL imports and move the graphs with from_dgl", attribute=True)
    if name in ("SST", "SSTDataset"):
        from ..base import not_built

        raise not_built(f"dgl.data.{name}", "DGL parses SST's trees with nltk and networkx, which bgl does not use: "
                        "build the trees with bgl.dgl.graph (or move them with from_dgl where DGL imports)",
                        attribute=True)
    if name in _RDF:
        from ..base import not_built

        raise not_built(f"dgl.data.{name}", "DGL's RDF datasets need rdflib, which bgl does not use: build the "
                        "typed graph with bgl.dgl.heterograph (or move it with from_dgl where DGL imports)",
                        attribute=True)
    raise AttributeError(f"module 'bgl.dgl.data' has no attribute {name!r}")

from . import utils  # noqa: E402  (``dgl.data.utils.X`` after ``import bgl.dgl as dgl``)
