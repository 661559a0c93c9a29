"""Small ResNets of torchvision's ``BasicBlock`` for small images.

torchvision's ResNet hard-codes 3 input channels, an ImageNet stem (7×7 stride-2 convolution and
max-pool) and widths 64..512, and uses ``ReLU(inplace=True)``, which rewrites tensors a forward
hook already captured. :class:`SmallResNet` has the same forward pass and the same submodule
names (``conv1``, ``bn1``, ``relu``, ``maxpool``, ``layer1`` .. ``layer4``, ``avgpool``,
``fc``; hence the same ``state_dict`` keys) with a small-image stem (``stem_kernel``
convolution, stride 1, no max-pool), stage widths ``width·(1, 2, 4, 8)`` and out-of-place ReLUs,
built from ``BasicBlock`` directly (no private torchvision API).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock

__all__ = ["SmallResNet", "resnet"]


class SmallResNet(nn.Module):
    """ResNet of ``BasicBlock`` stages for ``(N, in_channels, H, W)`` images; see :func:`resnet`.

    The forward pass is torchvision's ResNet's: ``conv1``, ``bn1``, ``relu``, ``maxpool`` (here
    an ``Identity``), ``layer1`` .. ``layer4``, ``avgpool``, flatten, ``fc``.

    Parameters
    ----------
    in_channels, width, blocks, stem_kernel, num_classes
        As in :func:`resnet` (validated there).
    """

    def __init__(self, *, in_channels: int, width: int, blocks: tuple[int, ...],
                 stem_kernel: int, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, width, kernel_size=stem_kernel, stride=1,
                               padding=stem_kernel // 2, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.maxpool = nn.Identity()
        inplanes = width
        for stage, n in enumerate(blocks, start=1):
            planes = width * 2 ** (stage - 1)
            stride = 1 if stage == 1 else 2
            layer, inplanes = _stage(inplanes, planes, n, stride)
            setattr(self, f"layer{stage}", layer)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8 * width, num_classes)
        for m in self.modules():  # torchvision's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.ReLU):
                m.inplace = False  # in-place ReLU would rewrite activations captured by hooks

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, num_classes)`` of images ``(N, in_channels, H, W)``."""
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))

    def forward_units(self) -> list[tuple[str, nn.Module]]:
        """The forward pass as ordered ``(submodule path, module)`` pairs, up to ``avgpool``.

        Chaining the modules reproduces the forward pass up to the pooled features; every probe
        point is one of the paths. :func:`topolip.bounds.segments.model_segments` cuts it at the
        probes.
        """
        units = [(name, getattr(self, name)) for name in ("conv1", "bn1", "relu", "maxpool")]
        for stage in ("layer1", "layer2", "layer3", "layer4"):
            units += [(f"{stage}.{name}", m)
                      for name, m in getattr(self, stage).named_children()]
        return units + [("avgpool", self.avgpool)]


def _stage(inplanes: int, planes: int, n: int, stride: int) -> tuple[nn.Sequential, int]:
    """``n`` BasicBlocks, the first with stride ``stride`` (and a 1×1 projection shortcut when
    the shape changes), as torchvision builds a ResNet stage; returns it and its out channels."""
    downsample = None
    if stride != 1 or inplanes != planes:
        downsample = nn.Sequential(
            nn.Conv2d(inplanes, planes, kernel_size=1, stride=stride, bias=False),
            nn.BatchNorm2d(planes),
        )
    layers = [BasicBlock(inplanes, planes, stride, downsample)]
    layers += [BasicBlock(planes, planes) for _ in range(1, n)]
    return nn.Sequential(*layers), planes


def _advance_rng_like_torchvision(blocks: tuple[int, ...], num_classes: int) -> None:
    """Draw from torch's global generator exactly what ``torchvision.models.resnet.ResNet(
    BasicBlock, blocks, num_classes)`` used to draw when :func:`resnet` built (and discarded)
    it first, without building it: the same initialisers on tensors of the same shapes, one
    at a time. A seeded :func:`resnet` therefore has the weights it always had (trained
    checkpoints, their cache keys aside, and the book's tables are unchanged).
    """
    a = math.sqrt(5.0)  # nn.Conv2d / nn.Linear reset_parameters
    convs: list[tuple[int, ...]] = [(64, 3, 7, 7)]  # in torchvision's construction order
    normal: list[tuple[int, ...]] = [(64, 3, 7, 7)]  # in its modules() order
    inplanes = 64
    for stage, n in enumerate(blocks):
        planes = 64 * 2 ** stage
        for j in range(n):
            cin = inplanes if j == 0 else planes
            down = [(planes, inplanes, 1, 1)] if j == 0 and stage > 0 else []
            convs += down + [(planes, cin, 3, 3), (planes, planes, 3, 3)]
            normal += [(planes, cin, 3, 3), (planes, planes, 3, 3)] + down
        inplanes = planes
    for shape in convs:
        nn.init.kaiming_uniform_(torch.empty(shape), a=a)
    nn.init.kaiming_uniform_(torch.empty(num_classes, 512), a=a)
    nn.init.uniform_(torch.empty(num_classes), -1.0 / math.sqrt(512), 1.0 / math.sqrt(512))
    for shape in normal:
        nn.init.kaiming_normal_(torch.empty(shape), mode="fan_out", nonlinearity="relu")


def resnet(
    *,
    in_channels: int = 1,
    width: int = 16,
    blocks: Sequence[int] = (1, 1, 1, 1),
    stem_kernel: int = 3,
    num_classes: int = 10,
) -> SmallResNet:
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
    SmallResNet
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
    _advance_rng_like_torchvision(blocks, num_classes)
    model = SmallResNet(in_channels=in_channels, width=width, blocks=blocks,
                        stem_kernel=stem_kernel, num_classes=num_classes)
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
