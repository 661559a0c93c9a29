"""Small ResNets built from :class:`torchvision.models.resnet.ResNet` with ``BasicBlock``.

torchvision's ResNet hard-codes 3 input channels, an ImageNet stem (7×7 stride-2 convolution and
max-pool) and widths 64..512, and uses ``ReLU(inplace=True)``, which rewrites tensors a forward
hook already captured. :func:`resnet` keeps the class, its ``_make_layer`` and its blocks, but
sets a small-image stem (``stem_kernel`` convolution, stride 1, no max-pool), stage widths
``width·(1, 2, 4, 8)``, and out-of-place ReLUs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch  # noqa: F401  (the doctests use it)
from torch import nn
from torchvision.models.resnet import BasicBlock, ResNet

__all__ = ["resnet"]


def resnet(
    *,
    in_channels: int = 1,
    width: int = 16,
    blocks: Sequence[int] = (1, 1, 1, 1),
    stem_kernel: int = 3,
    num_classes: int = 10,
) -> ResNet:
    """Build a small ResNet with ``BasicBlock`` for ``(N, in_channels, H, W)`` images in [0, 1].

    Parameters
    ----------
    in_channels : int, default=1
        Channels of the input.
    width : int, default=16
        Channels of the stem and first stage; stage ``s`` has ``width * 2**s`` channels.
    blocks : sequence of 4 int, default=(1, 1, 1, 1)
        Residual blocks per stage (ResNet-18 is ``(2, 2, 2, 2)``); stages 2-4 halve the
        resolution.
    stem_kernel : int, default=3
        Odd kernel size of the stem convolution (stride 1, "same" padding).
    num_classes : int, default=10
        Number of output logits.

    Returns
    -------
    torchvision.models.resnet.ResNet
        With attribute ``probe_points``: ordered ``{label: submodule path}`` of the probed layers
        (``stem``, ``block1`` .. ``block{sum(blocks)}``, ``pool``); the input is the implicit
        first probe point.

    Raises
    ------
    ValueError
        If ``blocks`` does not have 4 positive entries or ``stem_kernel`` is not a positive odd
        integer.

    Examples
    --------
    >>> model = resnet(width=8)
    >>> model(torch.zeros(2, 1, 28, 28)).shape
    torch.Size([2, 10])
    >>> list(model.probe_points)
    ['stem', 'block1', 'block2', 'block3', 'block4', 'pool']
    """
    blocks = tuple(int(b) for b in blocks)
    if len(blocks) != 4 or min(blocks) < 1:
        raise ValueError(
            f"resnet: blocks must be 4 positive integers (one per stage), got {blocks}"
        )
    if stem_kernel < 1 or stem_kernel % 2 == 0:
        raise ValueError(f"resnet: stem_kernel must be a positive odd integer, got {stem_kernel}")
    if width < 1 or in_channels < 1 or num_classes < 1:
        raise ValueError(
            f"resnet: width, in_channels and num_classes must be positive, got "
            f"{width}, {in_channels}, {num_classes}"
        )
    model = ResNet(BasicBlock, list(blocks), num_classes=num_classes)
    model.inplanes = width
    model.conv1 = nn.Conv2d(in_channels, width, kernel_size=stem_kernel, stride=1,
                            padding=stem_kernel // 2, bias=False)
    model.bn1 = nn.BatchNorm2d(width)
    model.maxpool = nn.Identity()
    model.layer1 = model._make_layer(BasicBlock, width, blocks[0])
    model.layer2 = model._make_layer(BasicBlock, 2 * width, blocks[1], stride=2)
    model.layer3 = model._make_layer(BasicBlock, 4 * width, blocks[2], stride=2)
    model.layer4 = model._make_layer(BasicBlock, 8 * width, blocks[3], stride=2)
    model.fc = nn.Linear(8 * width, num_classes)
    for m in model.modules():  # torchvision's initialisation, applied to the rebuilt layers
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.ReLU):
            m.inplace = False  # in-place ReLU would rewrite activations captured by hooks
    # Probe the stem after its ReLU (the Identity that replaced the max-pool), each block's
    # output, and the pooled features (N, 8·width, 1, 1).
    probes = {"stem": "maxpool"}
    k = 0
    for stage, n in enumerate(blocks, start=1):
        for j in range(n):
            k += 1
            probes[f"block{k}"] = f"layer{stage}.{j}"
    probes["pool"] = "avgpool"
    model.probe_points = probes
    model.arch = "resnet"
    return model
