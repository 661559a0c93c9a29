"""Shared fixtures: the trained tiny models several test files measure (trained once per module
that uses them, from the same seeds, so every file sees the same weights)."""

from __future__ import annotations

import pytest
import torch

from topolip.nets.data.mnist import load_mnist
from topolip.nets.run_spec import ModelSpec, TrainConfig
from topolip.nets.train import fit


@pytest.fixture(scope="module")
def mnist_600():
    """600 training and 120 test images of the embedded MNIST digits (split seed 0)."""
    return load_mnist(n_train=600, n_test=120, seed=0)


@pytest.fixture(scope="module")
def tiny_resnet(mnist_600):
    """A width-4 ResNet trained 3 epochs on :func:`mnist_600` (test accuracy above 0.5)."""
    torch.manual_seed(0)
    result = fit(ModelSpec("resnet", {"width": 4}), mnist_600,
                 TrainConfig(epochs=3, batch_size=32, lr=3e-3), device="cpu", progress=False)
    assert result.test_accuracy > 0.5, "the fixture model must have learned something"
    return result.model


@pytest.fixture(scope="module")
def tiny_conv_stack():
    """A 2-layer, 4-channel convolution stack trained 2 epochs on 300 images, and its data."""
    data = load_mnist(n_train=300, n_test=60, seed=0)
    torch.manual_seed(0)
    result = fit(ModelSpec("conv_stack", {"num_layers": 2, "channels": 4}), data,
                 TrainConfig(epochs=2, batch_size=32, lr=3e-3), device="cpu", progress=False)
    return result.model, data
