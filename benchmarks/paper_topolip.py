"""TopoLip of one paper-size model at the paper profile's number of points: where the time goes.

For each architecture of ``data/profiles/paper.yml`` (its sizes, CIFAR-shaped 3x32x32 input,
untrained weights: the costs depend on the sizes, not on what was learned) this times, on
``n_points`` random images and their Gaussian-noise perturbation (severity 3):

- **forward**: one pass of the clean and of the perturbed images collecting every probe point's
  activations (:func:`topolip.nets.models.probes.forward_probes`), on the chosen device;
- **distance matrices**: one per cloud (:func:`topolip.topology.points.pairwise_distances`, CPU,
float64);
- **clean diagrams**: the Rips diagrams of every clean cloud (ripser on the CPU, in
  :func:`topolip.topology.rips.default_jobs` worker processes, started before timing);
- **table**: the perturbed clouds' diagrams (as above) and the per-layer displacements and
  ratios (:func:`topolip.topology.metric.topolip_table`, CPU).

Only the forward pass can run on a GPU; the rest is CPU work on any machine. One table is what
``02_topolip`` computes per model, perturbation kind and bootstrap resample (the clean diagrams
once per model), so these seconds scale with ``len(topolip_strengths) * (1 + n_image_resamples)``.

Usage: python benchmarks/paper_topolip.py [--device cuda] [--archs vit resnet] [--points 500]
(a JSON line naming the machine, then one per architecture; ``benchmarks/gpu_check.py`` runs it
as its third part). Measured on the 2-core CPU machine (forward pass on the CPU too, one torch
thread): ``data/reference/paper_topolip_cpu2.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from topolip.nets.data.split import ImageSplit
from topolip.nets.models.probes import forward_probes
from topolip.nets.run_spec import spec_for
from topolip.perturbations.attacks import perturb_at
from topolip.topology.metric import layer_diagrams, topolip_table
from topolip.topology.points import pairwise_distances
from topolip.topology.rips import PARALLEL_MIN_POINTS, default_jobs, rips_diagrams_many
from topolip.topology.spec import TopoLipSpec

ROOT = Path(__file__).resolve().parents[1]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_model(arch: str, sizes: dict, n_points: int, spec: TopoLipSpec,
               device: torch.device | str, seed: int = 0) -> dict:
    """Seconds of each phase of one TopoLip table of an untrained ``arch`` (see module doc)."""
    device = torch.device(device)
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n_points, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (n_points,), generator=g)
    cifar_shaped = ImageSplit("cifar-shaped-random", x, y, x, y)
    torch.manual_seed(seed)
    model = spec_for(arch, sizes, cifar_shaped).build().to(device).eval()
    x_pert = perturb_at("gaussian_noise", model, x, y, 3, seed=seed)
    forward_probes(model, x[:8], device=device)  # warm-up (CUDA context, kernels)
    _sync(device)
    t0 = time.perf_counter()
    clean, _ = forward_probes(model, x, device=device)
    pert, _ = forward_probes(model, x_pert, device=device)
    _sync(device)
    t1 = time.perf_counter()
    clean_d = {k: pairwise_distances(a) for k, a in clean.items()}
    pert_d = {k: pairwise_distances(a) for k, a in pert.items()}
    t2 = time.perf_counter()
    dgms = layer_diagrams(clean, spec, distances=clean_d)
    t3 = time.perf_counter()
    topolip_table(clean, pert, spec, clean_diagrams=dgms, clean_distances=clean_d,
                  perturbed_distances=pert_d)
    t4 = time.perf_counter()
    return {"part": "paper-topolip", "arch": arch, "device": str(device), "n_points": n_points,
            "probe_points": len(clean), "widest_cloud": max(a.shape[1] for a in clean.values()),
            "ripser_jobs": default_jobs(len(clean)),
            "forward_s": round(t1 - t0, 3), "distance_matrices_s": round(t2 - t1, 3),
            "clean_diagrams_s": round(t3 - t2, 3), "table_s": round(t4 - t3, 3),
            "cpu_share": round((t4 - t1) / (t4 - t0), 3)}


def run(device: str, archs: list[str] | None, n_points: int | None) -> list[dict]:
    """Time every paper architecture (or ``archs``); print and return one row each."""
    paper = yaml.safe_load((ROOT / "data/profiles/paper.yml").read_text())
    spec = TopoLipSpec.from_params(paper)
    print(json.dumps({"part": "paper-topolip", "device": device, "torch": torch.__version__,
                      "cpus": len(os.sched_getaffinity(0)),
                      "torch_threads": torch.get_num_threads(), "weights": "untrained"}),
          flush=True)
    jobs = default_jobs(64)
    warm = np.random.default_rng(0).normal(size=(PARALLEL_MIN_POINTS, 4))
    rips_diagrams_many([warm] * jobs, n_jobs=jobs)  # start ripser's worker processes
    rows = []
    for arch in archs or paper["archs"]:
        row = time_model(arch, paper[arch], n_points or paper["n_points"], spec, device)
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="device of the forward pass")
    parser.add_argument("--archs", nargs="+", default=None)
    parser.add_argument("--points", type=int, default=None,
                        help="images per cloud (default: the paper profile's n_points)")
    args = parser.parse_args()
    run(args.device, args.archs, args.points)


if __name__ == "__main__":
    main()
