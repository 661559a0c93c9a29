"""GPU path check: training on CUDA (bfloat16 autocast) with the quick and paper model sizes.

Run on a machine with a GPU::

    python benchmarks/gpu_check.py            # quick models on real MNIST + paper-size epoch times

Part 1 trains the quick profile's ViT and ResNet on the embedded MNIST digits (seed 0) and prints
their clean test accuracy and seconds per epoch, to compare with the CPU run of the book. Part 2
times one training epoch of each paper-profile architecture on 50,000 CIFAR-shaped images (random
pixels and labels: the timing, not the accuracy, is the point; CIFAR-10 itself cannot be
downloaded where this runs) and extrapolates the paper profile's training time. Part 3 times one
TopoLip table of each paper-size model at the paper profile's ``n_points``
(``benchmarks/paper_topolip.py``): the forward pass on the GPU, and the parts that stay on the
CPU (distance matrices, ripser's diagrams, the displacements), each in seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
import yaml

from topolip.nets.data.mnist import load_mnist
from topolip.nets.data.split import ImageSplit
from topolip.nets.run_spec import TrainConfig, spec_for
from topolip.nets.train import fit

ROOT = Path(__file__).resolve().parents[1]


def report(**row) -> None:
    print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--paper-epochs", type=int, default=1)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: this check is for a GPU machine")
    device = torch.device("cuda")
    report(device=torch.cuda.get_device_name(0), torch=torch.__version__)

    quick = yaml.safe_load((ROOT / "data/profiles/quick.yml").read_text())
    data = load_mnist(quick["n_train"], quick["n_test"], seed=quick["split_seed"])
    for arch in ("vit", "resnet"):
        config = TrainConfig(epochs=quick["epochs"], batch_size=quick["batch_size"],
                             lr=quick["lr"], weight_decay=quick["weight_decay"], seed=0)
        t0 = time.perf_counter()
        result = fit(spec_for(arch, quick[arch], data), data, config, device=device,
                     progress=False)
        torch.cuda.synchronize()
        report(part="quick-mnist", arch=arch, test_accuracy=result.test_accuracy,
               epochs=config.epochs, seconds=round(time.perf_counter() - t0, 2),
               seconds_per_epoch=[round(h["seconds"], 2) for h in result.history])

    paper = yaml.safe_load((ROOT / "data/profiles/paper.yml").read_text())
    g = torch.Generator().manual_seed(0)
    n, m = paper["n_train"], 1000
    synthetic = ImageSplit(
        name="cifar-shaped-random",
        x_train=torch.rand(n, 3, 32, 32, generator=g),
        y_train=torch.randint(0, 10, (n,), generator=g),
        x_test=torch.rand(m, 3, 32, 32, generator=g),
        y_test=torch.randint(0, 10, (m,), generator=g),
    )
    total = 0.0
    for arch in paper["archs"]:
        config = TrainConfig(epochs=args.paper_epochs, batch_size=paper["batch_size"],
                             lr=paper["lr"], weight_decay=paper["weight_decay"], seed=0)
        result = fit(spec_for(arch, paper[arch], synthetic), synthetic, config, device=device,
                     progress=False)
        per_epoch = result.history[-1]["seconds"]  # the last epoch: after CUDA warm-up
        full = per_epoch * paper["epochs"] * len(paper["seeds"])
        total += full
        report(part="paper-size", arch=arch,
               parameters=sum(p.numel() for p in result.model.parameters()),
               seconds_per_epoch=round(per_epoch, 2),
               extrapolated_training_minutes=round(full / 60, 1))
    report(part="paper-size", extrapolated_training_minutes_all=round(total / 60, 1),
           epochs=paper["epochs"], seeds=paper["seeds"], archs=paper["archs"])

    import paper_topolip  # this folder is on sys.path when the script runs

    paper_topolip.run("cuda", None, None)  # prints one row per architecture


if __name__ == "__main__":
    main()
