"""DGL's dataset base classes, ``dgl.data.DGLDataset`` and ``DGLBuiltinDataset``, without downloading.

A user's dataset subclasses :class:`DGLDataset` as under DGL 2.1 and runs unchanged: the constructor calls,
in DGL's order,

1. ``has_cache()`` (unless ``force_reload``); when True, ``load()``: done (a ``load`` that raises is
   reported when ``verbose`` and falls through to 2);
2. ``download()``, only when ``raw_path`` does not exist yet (``raw_dir`` created first);
3. ``process()``, then ``save()``.

``raw_path`` / ``save_path`` are ``raw_dir`` / ``save_dir`` joined with ``name``, plus ``_`` and 8 hex digits of
the URL's SHA-1 when there is a URL (where DGL 2.1 extracts a download); ``hash`` is 8 hex digits of the
SHA-1 of ``str(hash_key)`` (``'f9065fa7'`` for ``()``).  ``raw_dir`` defaults to DGL's folder
(``$DGL_DOWNLOAD_DIR`` or ``~/.dgl``, created), ``save_dir`` to ``raw_dir``.

The one difference: nothing is downloaded.  :meth:`DGLBuiltinDataset.download` extracts
``raw_dir/<name>.zip`` when that file is already there and otherwise raises FileNotFoundError naming the
folder to put the extracted files in (``raw_path``) and the URL they come from.  ``__getitem__`` and
``__len__`` of the base raise NotImplementedError (DGL's return None, which fails later and less clearly).
"""
from __future__ import annotations

import hashlib
import os
import traceback
from typing import Callable, Optional

from .utils import download, extract_archive, get_download_dir, makedirs


class DGLDataset:
    """The base of a dataset: subclass it, write ``process`` (and optionally ``download``, ``save``, ``load``,
    ``has_cache``), ``__getitem__`` and ``__len__`` (module doc for the call order).

    Parameters
    ----------
    name : the dataset's name (folder names ``raw_path`` / ``save_path`` follow it)
    url : where DGL would download the raw data from (None: no download step)
    raw_dir : folder holding the raw data (default DGL's download folder)
    save_dir : folder for the processed data (default ``raw_dir``)
    hash_key : values whose SHA-1 names this setting of the dataset (``hash``)
    force_reload : skip ``has_cache`` / ``load`` and process again
    verbose : print progress as DGL does
    transform : callable applied to a graph on every access (the subclass's ``__getitem__`` calls
        ``self._transform``, as DGL's built-in datasets do)
    """

    def __init__(self, name: str, url: Optional[str] = None, raw_dir=None, save_dir=None, hash_key=(),
                 force_reload: bool = False, verbose: bool = False, transform: Optional[Callable] = None):
        self._name = name
        self._url = url
        self._force_reload = force_reload
        self._verbose = verbose
        self._hash_key = hash_key
        self._hash = self._get_hash()
        self._transform = transform
        self._raw_dir = get_download_dir() if raw_dir is None else raw_dir
        self._save_dir = self._raw_dir if save_dir is None else save_dir
        self._load()

    # ------------------------------------------------------------------ what subclasses write
    def download(self) -> None:
        """Fetch the raw data into ``raw_dir`` (nothing by default)."""

    def save(self) -> None:
        """Store the processed data under ``save_path`` (nothing by default)."""

    def load(self) -> None:
        """Read what :meth:`save` stored (nothing by default)."""

    def process(self) -> None:
        """Turn the raw data into the dataset's graphs (nothing by default)."""

    def has_cache(self) -> bool:
        """Whether :meth:`load` can read a processed copy (False by default)."""
        return False

    def __getitem__(self, idx):
        raise NotImplementedError(f"{type(self).__name__} does not define __getitem__ (DGLDataset's subclasses do)")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} does not define __len__ (DGLDataset's subclasses do)")

    def _transformed(self, g):
        """``g`` after the ``transform`` given (``g`` itself without one): what ``__getitem__`` hands out."""
        return g if self._transform is None else self._transform(g)

    # ------------------------------------------------------------------ DGL's protocol
    def _download(self) -> None:
        if os.path.exists(self.raw_path):
            return
        makedirs(self.raw_dir)
        self.download()

    def _load(self) -> None:
        loaded = not self._force_reload and self.has_cache()
        if loaded:
            try:
                self.load()
                if self.verbose:
                    print("Done loading data from cached files.")
            except KeyboardInterrupt:
                raise
            except Exception:
                loaded = False
                if self.verbose:
                    print(traceback.format_exc())
                    print("Loading from cache failed, re-processing.")
        if not loaded:
            self._download()
            self.process()
            self.save()
            if self.verbose:
                print("Done saving data into cached files.")

    def _get_hash(self) -> str:
        return hashlib.sha1(str(self._hash_key).encode("utf-8")).hexdigest()[:8]

    def _get_hash_url_suffix(self) -> str:
        if self._url is None:
            return ""
        return "_" + hashlib.sha1(str(self._url).encode("utf-8")).hexdigest()[:8]

    @property
    def url(self) -> Optional[str]:
        return self._url

    @property
    def name(self) -> str:
        return self._name

    @property
    def raw_dir(self):
        return self._raw_dir

    @property
    def raw_path(self) -> str:
        """``raw_dir/<name>[_<url hash>]``: where the raw files are (DGL extracts its download there)."""
        return os.path.join(self.raw_dir, self.name + self._get_hash_url_suffix())

    @property
    def save_dir(self):
        return self._save_dir

    @property
    def save_path(self) -> str:
        return os.path.join(self.save_dir, self.name + self._get_hash_url_suffix())

    @property
    def verbose(self) -> bool:
        return self._verbose

    @property
    def hash(self) -> str:
        return self._hash

    def __repr__(self) -> str:
        return f'Dataset("{self.name}", num_graphs={len(self)}, save_path={self.save_path})'


class DGLBuiltinDataset(DGLDataset):
    """The base of DGL's own datasets: a URL, ``save_dir`` = ``raw_dir``, and a :meth:`download` that unpacks
    ``raw_dir/<name>.zip`` into ``raw_path`` when the zip is already there (nothing is downloaded)."""

    def __init__(self, name: str, url: Optional[str], raw_dir=None, hash_key=(), force_reload: bool = False,
                 verbose: bool = False, transform: Optional[Callable] = None):
        super().__init__(name, url=url, raw_dir=raw_dir, save_dir=None, hash_key=hash_key,
                         force_reload=force_reload, verbose=verbose, transform=transform)

    def download(self) -> None:
        if self.url is None:
            return
        archive = os.path.join(self.raw_dir, self.name + ".zip")
        fetch_or_refuse(self.url, archive, self.raw_path, type(self).__name__)
        extract_archive(archive, self.raw_path)


def fetch_or_refuse(url: str, archive: str, folder: str, who: str) -> str:
    """``archive`` when it is already on disk; else FileNotFoundError in one line naming ``folder`` (where the
    extracted files go), the archive's place and the URL."""
    try:
        return download(url, path=archive)
    except FileNotFoundError:
        raise FileNotFoundError(f"{who}: no raw files in {folder} and no {archive}; bgl.dgl downloads nothing: "
                                f"put the files of {url} in {folder} (or the archive at {archive})") from None


def require_files(folder: str, names, url: str, who: str) -> None:
    """FileNotFoundError in one line when any of ``names`` is missing from ``folder``: which, and where to put
    the files of ``url``."""
    missing = [name for name in names if not os.path.isfile(os.path.join(folder, name))]
    if missing:
        raise FileNotFoundError(f"{who}: {', '.join(missing)} missing in {folder}; bgl.dgl downloads nothing: "
                                f"put the files of {url} there")


class OneGraphDataset(DGLBuiltinDataset):
    """A built-in dataset of one graph, ``self._graph`` (set by ``process``): ``dataset[0]`` (through
    ``transform``), ``len == 1``; another index fails DGL's assertion, in DGL's words (``_only_one``)."""

    _only_one = "This dataset has only one graph."

    def __getitem__(self, idx: int):
        assert idx == 0, self._only_one
        return self._transformed(self._graph)

    def __len__(self) -> int:
        return 1


def named_subclass(base: type, cls_name: str, name: str, doc: str, **attrs) -> type:
    """DGL's one-line dataset classes (``CoraFullDataset``, ``TexasDataset``, ...): ``base`` with its ``name``
    argument fixed to ``name`` and DGL's ``(raw_dir=None, force_reload=False, verbose, transform=None)``
    (``verbose`` defaults to ``base``'s); ``attrs`` become class attributes."""
    import inspect

    verbose_default = inspect.signature(base.__init__).parameters["verbose"].default

    def __init__(self, raw_dir=None, force_reload=False, verbose=verbose_default, transform=None):
        base.__init__(self, name, raw_dir, force_reload, verbose, transform)

    return type(cls_name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": base.__module__, **attrs})
