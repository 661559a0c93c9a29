"""Data sets: the embedded MNIST digits (default), CIFAR-10 from a local folder, and
out-of-distribution sets that need no network."""

from __future__ import annotations

from .mnist import load_mnist
from .split import ImageSplit, stratified_split

__all__ = ["ImageSplit", "load_mnist", "stratified_split"]
