"""CIFAR-10 loader on a tiny fixture written in CIFAR-10's own on-disk format.

The real ``cifar-10-batches-py`` files are Python 2 pickles (protocol 2) whose dict keys and
file names are Python 2 ``str``: bytes on disk, read back as ``b'data'`` with
``encoding="bytes"`` and as ``'data'`` with ``encoding="latin1"`` (torchvision's choice). The
fixture writes the same opcodes, so torchvision's reader meets what it meets on real data. The
md5 sums torchvision checks are those of the real files; the tests point torchvision's class
attributes at the fixture's sums with ``monkeypatch`` (restored after each test).
"""

from __future__ import annotations

import hashlib
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from torchvision.datasets import CIFAR10

from topolip.nets.data.cifar import CIFAR10_CLASSES, load_cifar10

N_PER_TRAIN_BATCH = 6  # 5 batches: 30 training images, 3 per class
N_TEST = 10
MARK = (2, 5, 7)  # (channel, row, column) of the pixel that holds each image's id


class _Py2Str(str):
    """A Python 2 ``str`` (a byte string), as CIFAR-10's pickles hold for keys and names."""


class _Py2Pickler(pickle._Pickler):  # the pure-Python pickler, whose dispatch table we extend
    dispatch = pickle._Pickler.dispatch.copy()

    def _save_py2str(self, obj):
        raw = obj.encode("latin1")
        if len(raw) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(raw)]) + raw)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(raw)) + raw)
        self.memoize(obj)

    dispatch[_Py2Str] = _save_py2str


def _dump(obj, path: Path) -> str:
    with open(path, "wb") as f:
        _Py2Pickler(f, protocol=2).dump(obj)
    return hashlib.md5(path.read_bytes()).hexdigest()


def _batch(label: str, ids: range, labels: list[int], rng: np.random.Generator) -> dict:
    data = rng.integers(0, 256, size=(len(ids), 3072), dtype=np.uint8)
    c, i, j = MARK
    data[:, 1024 * c + 32 * i + j] = list(ids)  # image id, readable after any shuffle
    return {_Py2Str("batch_label"): _Py2Str(label), _Py2Str("labels"): labels,
            _Py2Str("data"): data,
            _Py2Str("filenames"): [_Py2Str(f"img_{k:05d}.png") for k in ids]}


@pytest.fixture
def cifar_root(tmp_path, monkeypatch):
    """Write ``tmp_path/cifar-10-batches-py`` (~125 KB) and return ``(root, raw rows by id)``."""
    folder = tmp_path / CIFAR10.base_folder
    folder.mkdir()
    rng = np.random.default_rng(0)
    rows, train_list = {}, []
    for b in range(5):
        ids = range(b * N_PER_TRAIN_BATCH, (b + 1) * N_PER_TRAIN_BATCH)
        entry = _batch(f"training batch {b + 1} of 5", ids, [k % 10 for k in ids], rng)
        rows.update(zip(ids, entry[_Py2Str("data")], strict=True))
        name = f"data_batch_{b + 1}"
        train_list.append([name, _dump(entry, folder / name)])
    ids = range(100, 100 + N_TEST)
    entry = _batch("testing batch 1 of 1", ids, [k % 10 for k in ids], rng)
    # A known pixel: green plane (c = 1), row 3, column 4 of test image 100 is 123.
    entry[_Py2Str("data")][0, 1024 * 1 + 32 * 3 + 4] = 123
    rows.update(zip(ids, entry[_Py2Str("data")], strict=True))
    test_list = [["test_batch", _dump(entry, folder / "test_batch")]]
    meta = {_Py2Str("num_cases_per_batch"): N_PER_TRAIN_BATCH,
            _Py2Str("label_names"): [_Py2Str(c) for c in CIFAR10_CLASSES],
            _Py2Str("num_vis"): 3072}
    meta_md5 = _dump(meta, folder / "batches.meta")
    monkeypatch.setattr(CIFAR10, "train_list", train_list)
    monkeypatch.setattr(CIFAR10, "test_list", test_list)
    monkeypatch.setattr(CIFAR10, "meta", {**CIFAR10.meta, "md5": meta_md5})
    return tmp_path, rows


def _id(image: torch.Tensor) -> int:
    return round(float(image[MARK]) * 255)


def test_fixture_has_cifar_on_disk_format(cifar_root):
    root, _ = cifar_root
    folder = root / CIFAR10.base_folder
    assert sum(p.stat().st_size for p in folder.iterdir()) < 200_000
    with open(folder / "data_batch_1", "rb") as f:
        entry = pickle.load(f, encoding="bytes")  # as the real files read
    assert set(entry) == {b"batch_label", b"labels", b"data", b"filenames"}
    assert entry[b"data"].dtype == np.uint8 and entry[b"data"].shape == (N_PER_TRAIN_BATCH, 3072)
    assert entry[b"filenames"][0] == b"img_00000.png"


def test_shapes_dtype_range_labels(cifar_root):
    root, _ = cifar_root
    d = load_cifar10(root, n_train=20, n_test=10, seed=0)
    assert d.name == "cifar10"
    assert d.x_train.shape == (20, 3, 32, 32) and d.x_test.shape == (10, 3, 32, 32)
    assert d.x_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    for x in (d.x_train, d.x_test):
        assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert d.y_train.bincount(minlength=10).tolist() == [2] * 10  # stratified
    assert sorted(d.y_test.tolist()) == list(range(10))
    # Labels stay with their images, and train/test come from their own files.
    assert all(_id(img) % 10 == int(lab) for img, lab in zip(d.x_train, d.y_train, strict=True))
    assert all(_id(img) < 30 for img in d.x_train) and all(_id(img) >= 100 for img in d.x_test)
    assert len({_id(img) for img in d.x_train}) == 20  # no repeats


def test_decodes_the_on_disk_layout(cifar_root):
    root, rows = cifar_root
    d = load_cifar10(root, n_train=30, n_test=10, seed=3)
    test_100 = next(img for img in d.x_test if _id(img) == 100)
    assert test_100[1, 3, 4] == pytest.approx(123 / 255)
    for img in torch.cat([d.x_train, d.x_test]):
        expected = rows[_id(img)].reshape(3, 32, 32).astype(np.float32) / 255  # R, G, B planes
        assert np.array_equal(img.numpy(), expected)


def test_seeded_and_path_variants(cifar_root):
    root, _ = cifar_root
    a = load_cifar10(root, n_train=10, n_test=5, seed=1)
    b = load_cifar10(str(root / CIFAR10.base_folder), n_train=10, n_test=5, seed=1)
    c = load_cifar10(root, n_train=10, n_test=5, seed=2)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert not torch.equal(a.x_train, c.x_train)


def test_missing_folder_says_how_to_get_the_data(tmp_path):
    with pytest.raises(FileNotFoundError, match="download[=]True.*cifar-10-python.tar.gz"):
        load_cifar10(tmp_path, n_train=10, n_test=10, seed=0)


def test_missing_file_is_named(cifar_root):
    root, _ = cifar_root
    (root / CIFAR10.base_folder / "data_batch_3").unlink()
    with pytest.raises(ValueError, match=r"missing \['data_batch_3'\]"):
        load_cifar10(root, n_train=10, n_test=10, seed=0)


def test_corrupted_file_fails_md5(cifar_root):
    root, _ = cifar_root
    with open(root / CIFAR10.base_folder / "test_batch", "ab") as f:
        f.write(b"\0")
    with pytest.raises(ValueError, match="md5"):
        load_cifar10(root, n_train=10, n_test=10, seed=0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(n_train=31, n_test=5), "n_train=31 exceeds the 30 CIFAR-10 train images"),
    (dict(n_train=5, n_test=11), "n_test=11 exceeds the 10 CIFAR-10 test images"),
    (dict(n_train=0, n_test=5), "n_train must be a positive integer"),
])
def test_bad_sizes_raise(cifar_root, kwargs, match):
    root, _ = cifar_root
    with pytest.raises(ValueError, match=match):
        load_cifar10(root, seed=0, **kwargs)
