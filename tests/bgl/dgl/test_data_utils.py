"""``bgl.dgl.data.utils``: DGL's ``dgl.data.utils`` helpers that example scripts import.

Pinned lane: the same calls on DGL 2.1 give the same subsets, masks, URLs and files found; DGL's own
tensor file is refused in one line.  Both lanes: tensors round-trip (dtypes included), nothing is
downloaded (a missing file names the URL and the path), an archive member outside the target folder
is refused before anything is written.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import tarfile
import zipfile

import numpy as np
import pytest
import torch

import bgl.dgl as bdgl
from bgl.dgl.base import DGLError
from bgl.dgl.data import utils

HAS_DGL = importlib.util.find_spec("dgl") is not None
needs_dgl = pytest.mark.skipif(not HAS_DGL, reason="needs DGL (pinned lane) to compare against")


def test_the_module_is_reached_as_dgl_data_utils():
    assert bdgl.data.utils is utils
    from bgl.dgl.data.utils import Subset, save_graphs, split_dataset  # noqa: F401  (the scripts' import line)


@pytest.mark.parametrize("frac, shuffle, seed", [(None, False, None), ([0.6, 0.2, 0.2], True, 3),
                                                 ([0.7, 0.3, 0.0], True, 0)])
def test_split_dataset_cuts_as_dgls(frac, shuffle, seed):
    data = list(range(103))
    parts = utils.split_dataset(data, frac, shuffle=shuffle, random_state=seed)
    assert sum(len(p) for p in parts) == 103
    assert sorted(x for p in parts for x in (p[i] for i in range(len(p)))) == data
    if HAS_DGL:
        from dgl.data.utils import split_dataset

        theirs = split_dataset(data, frac, shuffle=shuffle, random_state=seed)
        assert [[p[i] for i in range(len(p))] for p in parts] == [[p[i] for i in range(len(p))] for p in theirs]


def test_split_dataset_refuses_fractions_that_do_not_sum_to_one():
    with pytest.raises(AssertionError, match="Expect frac_list sum to 1"):
        utils.split_dataset(list(range(10)), [0.5, 0.2, 0.2])


def test_tensors_round_trip_with_their_dtypes(tmp_path):
    saved = {"feat": torch.randn(5, 3), "ids": torch.arange(7), "mask": torch.tensor([True, False]),
             "half": torch.randn(4).to(torch.bfloat16), "odd name/with slash": torch.zeros(0, 2, dtype=torch.int32)}
    path = tmp_path / "t.npz"
    utils.save_tensors(str(path), saved)
    loaded = utils.load_tensors(str(path))
    assert list(loaded) == list(saved)
    for k, v in saved.items():
        assert loaded[k].dtype == v.dtype and torch.equal(loaded[k], v), k
    assert [p.name for p in tmp_path.iterdir()] == ["t.npz"]  # no temporary left beside it


def test_save_tensors_refuses_what_is_not_a_dict_of_tensors(tmp_path):
    with pytest.raises(DGLError, match="'x' is a list"):
        utils.save_tensors(str(tmp_path / "t.npz"), {"x": [1, 2]})
    assert not list(tmp_path.iterdir())


@needs_dgl
def test_dgls_own_tensor_file_is_refused_in_one_line(tmp_path):
    from dgl.data.utils import save_tensors

    path = str(tmp_path / "dgl.bin")
    save_tensors(path, {"x": torch.arange(3)})
    with pytest.raises(DGLError, match="not a bgl.dgl tensor file") as e:
        utils.load_tensors(path)
    assert "\n" not in str(e.value)


def test_download_returns_a_file_in_place_and_names_a_missing_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = utils._get_dgl_url("dataset/thing.zip")
    (tmp_path / "thing.zip").write_bytes(b"abc")
    assert utils.download(url) == "thing.zip"
    assert utils.download(url, path=str(tmp_path)) == os.path.join(str(tmp_path), "thing.zip")
    good = hashlib.sha1(b"abc").hexdigest()
    assert utils.download(url, path=str(tmp_path / "thing.zip"), sha1_hash=good).endswith("thing.zip")
    with pytest.raises(FileNotFoundError, match="another SHA-1"):
        utils.download(url, sha1_hash="0" * 40)
    with pytest.raises(FileNotFoundError, match=r"downloads nothing .*other\.zip is missing: fetch "
                                                r"https://data.dgl.ai/dataset/other.zip and put it at"):
        utils.download(utils._get_dgl_url("dataset/other.zip"), path=str(tmp_path))


def test_urls_masks_and_folders_are_dgls(tmp_path, monkeypatch):
    monkeypatch.setenv("DGL_DOWNLOAD_DIR", str(tmp_path / "dl"))
    assert utils.get_download_dir() == str(tmp_path / "dl") and (tmp_path / "dl").is_dir()
    utils.makedirs(str(tmp_path / "a" / "b"))
    utils.makedirs(str(tmp_path / "a" / "b"))  # again: no error
    mask = utils.generate_mask_tensor(utils.idx2mask([1, 3], 5))
    assert mask.dtype == torch.bool and mask.tolist() == [False, True, False, True, False]
    if HAS_DGL:
        from dgl.data import utils as theirs

        for repo in (None, "http://mirror.local/x", "http://mirror.local/x/"):
            if repo is None:
                monkeypatch.delenv("DGL_REPO", raising=False)
            else:
                monkeypatch.setenv("DGL_REPO", repo)
            assert utils._get_dgl_url("dataset/cora.zip") == theirs._get_dgl_url("dataset/cora.zip")
        assert np.array_equal(utils.idx2mask([0, 2], 4), theirs.idx2mask([0, 2], 4))
        assert torch.equal(mask, theirs.generate_mask_tensor(utils.idx2mask([1, 3], 5)))


def test_archives_unpack_and_a_member_outside_the_target_is_refused(tmp_path):
    src = tmp_path / "f.txt"
    src.write_text("x")
    with tarfile.open(tmp_path / "ok.tar.gz", "w:gz") as t:
        t.add(src, arcname="d/f.txt")
    utils.extract_archive(str(tmp_path / "ok.tar.gz"), str(tmp_path / "out"))
    assert (tmp_path / "out" / "d" / "f.txt").read_text() == "x"
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as z:
        z.writestr("fine.txt", "y")
        z.writestr("../escaped.txt", "z")
    with pytest.raises(ValueError, match="outside"):
        utils.extract_archive(str(tmp_path / "bad.zip"), str(tmp_path / "out2"))
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "out2" / "fine.txt").exists()
