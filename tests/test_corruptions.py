"""Common corruptions: identity at severity 0, shapes and ranges, monotone strength, seeds."""

from __future__ import annotations

import pytest
import torch

from topolip.perturbations.corruptions import CORRUPTIONS, SEVERITIES, corrupt, corruption_params


@pytest.fixture(scope="module")
def digits():
    from topolip.nets.data.mnist import load_mnist

    return load_mnist(n_train=100, n_test=64, seed=0).x_test


@pytest.fixture(scope="module")
def rgb():
    return torch.rand(8, 3, 32, 32, generator=torch.Generator().manual_seed(0))


def test_table_is_complete():
    assert set(CORRUPTIONS) == {"gaussian_noise", "gaussian_blur", "contrast", "rotation",
                                "elastic"}
    assert all(len(rows) == 5 for rows in SEVERITIES.values())
    assert corruption_params("gaussian_noise", 5) == {"sigma": 0.38}


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_severity_zero_is_identity(kind, digits, rgb):
    for x in (digits, rgb):
        out = corrupt(x, kind, 0, seed=3)
        assert torch.equal(out, x)
        assert out.data_ptr() != x.data_ptr()  # a copy, never the input itself


@pytest.mark.parametrize("kind", CORRUPTIONS)
@pytest.mark.parametrize("severity", [1, 3, 5])
def test_shape_dtype_range_kept(kind, severity, digits, rgb):
    for x in (digits, rgb, digits.double()):
        out = corrupt(x, kind, severity, seed=0)
        assert out.shape == x.shape and out.dtype == x.dtype and out.device == x.device
        assert float(out.min()) >= 0.0 and float(out.max()) <= 1.0
        assert not torch.equal(out, x)


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_deterministic_by_seed(kind, digits):
    a = corrupt(digits, kind, 4, seed=7)
    assert torch.equal(a, corrupt(digits, kind, 4, seed=7))
    if kind in ("gaussian_noise", "rotation", "elastic"):  # the random ones
        assert not torch.equal(a, corrupt(digits, kind, 4, seed=8))


def test_global_rng_untouched(digits):
    state = torch.get_rng_state()
    corrupt(digits, "elastic", 2, seed=0)
    corrupt(digits, "gaussian_noise", 2, seed=0)
    assert torch.equal(state, torch.get_rng_state())


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_distance_grows_with_severity(kind, digits):
    # Mean L2 distance from the clean images over the batch (an estimate of the expectation).
    dist = [float((corrupt(digits, kind, s, seed=0) - digits).flatten(1).norm(dim=1).mean())
            for s in range(6)]
    assert dist[0] == 0.0
    assert all(b > a for a, b in zip(dist, dist[1:], strict=False)), dist


def test_contrast_is_the_documented_blend(digits):
    c = corruption_params("contrast", 2)["factor"]
    mean = digits.mean(dim=(1, 2, 3), keepdim=True)  # grayscale: the mean of the image
    torch.testing.assert_close(corrupt(digits, "contrast", 2), c * digits + (1 - c) * mean)


def test_noise_has_the_documented_sd():
    x = torch.full((200, 1, 28, 28), 0.5)
    noise = corrupt(x, "gaussian_noise", 1, seed=0) - x  # sigma 0.08: clipping negligible
    assert abs(float(noise.std()) - 0.08) < 0.002


def test_rotation_is_about_the_centre():
    # A centred bright dot stays in place under any rotation about the centre.
    x = torch.zeros(4, 1, 29, 29)
    x[:, :, 14, 14] = 1.0
    out = corrupt(x, "rotation", 5, seed=0)
    assert torch.allclose(out[:, :, 14, 14], torch.ones(4, 1), atol=1e-5)


@pytest.mark.parametrize("args,match", [
    ((torch.rand(2, 1, 8, 8), "fog", 1), "unknown corruption 'fog'"),
    ((torch.rand(2, 1, 8, 8), "contrast", 6), "severity must be an integer in 0..5"),
    ((torch.rand(2, 1, 8, 8), "contrast", 1.5), "severity must be an integer"),
    ((torch.rand(2, 1, 8, 8), "contrast", True), "severity must be an integer"),
    ((torch.rand(1, 8, 8), "contrast", 1), r"\(N, C, H, W\) tensor"),
    ((torch.randint(0, 255, (2, 1, 8, 8)), "contrast", 1), "floating"),
    ((torch.rand(2, 1, 8, 8) * 255, "contrast", 1), r"outside \[0, 1\]"),
    ((torch.full((2, 1, 8, 8), float("nan")), "contrast", 1), "NaN"),
    ((torch.rand(2, 2, 8, 8), "contrast", 1), "1 or 3 channels"),
])
def test_bad_input_raises(args, match):
    with pytest.raises(ValueError, match=match):
        corrupt(*args)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_cuda_matches_cpu(kind, rgb):
    out = corrupt(rgb.cuda(), kind, 3, seed=4)
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), corrupt(rgb, kind, 3, seed=4), rtol=0, atol=1e-4)
