"""Datasets shipped inside the package (installed as ``bgl.data``)."""
from importlib.resources import files


def default_dataset_path():
    """Path of the embedded default dataset (Cora, gnn-benchmark npz)."""
    return files(__name__) / "cora.npz"
