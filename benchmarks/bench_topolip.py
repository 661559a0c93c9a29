"""TopoLip of one model: one distance matrix per use against the shared-matrix engine.

For a quick-profile ViT and ResNet (untrained, the quick profile's sizes, MNIST-shaped input)
the activation clouds of ``n`` random images and of two perturbations of them (Gaussian noise
and a small uniform shift, standing in for the attacks: the costs do not depend on which) are
collected once; then three things are timed on the same clouds:

- **apart**: the per-layer TopoLip from the public functions with nothing shared, the way the
  TopoLip was computed before issue 13: the clean diagrams, then per perturbation the perturbed
  diagrams and the clean scale ``s_ℓ``, each computing its own distance matrix
  (:func:`apart_topolip`; the former engine itself, ``pdist`` inside every call, was retired in
  issue 20, its numbers are held by ``tests/expect/``);
- **new·1**: the engine in one process: :func:`topolip.topology.points.pairwise_distances` once per
  cloud, shared by the diagrams and the scale (what
  :func:`topolip.experiments.model_measurement.measure_model`
  does), ripser called cloud after cloud;
- **new·N**: the same with ripser in ``N`` worker processes over the clouds
  (:func:`topolip.topology.rips.rips_diagrams_many`, ``N`` =
  :func:`topolip.topology.rips.default_jobs`,
  the CPUs this process may use); the workers are started before timing (a one-off cost,
  printed once);
- **gudhi·N**: new·N with ``backend="gudhi"`` (GUDHI's Ripser port, float64; opt-in, the
  default stays ripser.py);
- **gemm**: the distance matrices alone (the floor of any matrix-based engine).

Repetitions of the paths are interleaved (the machine may be shared) and medians reported,
with the ratios apart/new and new/gemm; the diagrams of all ripser paths are compared (H0 and
H1, exact float64 equality required), and the tables to 1e-12; gudhi·N's diagrams to float32
rounding (ripser computes in float32 and may merge two distances GUDHI tells apart).

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_topolip.py [--sizes 100 200 400 800]
[--reps 5] [--archs vit resnet] [--jobs N] [--gudhi] [--cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from topolip.topology.metric import layer_diagrams, topolip_table
from topolip.topology.points import pairwise_distances
from topolip.topology.rips import (
    PARALLEL_MIN_POINTS,
    default_jobs,
    rips_diagrams,
    rips_diagrams_many,
)
from topolip.topology.spec import TopoLipSpec

PARALLEL_POINTS = PARALLEL_MIN_POINTS

QUICK = {
    "vit": {"patch_size": 7, "num_layers": 4, "num_heads": 4, "hidden_dim": 64, "mlp_dim": 128},
    "resnet": {"width": 16, "blocks": [1, 1, 1, 1], "stem_kernel": 3},
}


def apart_topolip(clean, perts, spec):
    """The public functions with nothing shared: the clean diagrams, then per perturbation
    :func:`topolip.topology.metric.topolip_table`, whose perturbed diagrams and clean scale each
    compute
    their own distance matrix."""
    dgms = {label: rips_diagrams(a, spec.degrees, backend=spec.backend)
            for label, a in clean.items()}
    return dgms, [topolip_table(clean, pert, spec, clean_diagrams=dgms, n_jobs=1)
                  for pert in perts]


def new_topolip(clean, perts, spec, n_jobs=1):  # spec.backend picks the persistence backend
    """The engine as :func:`topolip.experiments.model_measurement.measure_model` runs it."""
    clean_d = {label: pairwise_distances(a) for label, a in clean.items()}
    dgms = layer_diagrams(clean, spec, distances=clean_d, n_jobs=n_jobs)
    tables = []
    for pert in perts:
        pert_d = {label: pairwise_distances(a) for label, a in pert.items()}
        tables.append(topolip_table(clean, pert, spec, clean_diagrams=dgms,
                                    clean_distances=clean_d, perturbed_distances=pert_d,
                                    n_jobs=n_jobs))
    return dgms, tables


def gemm_only(clean, perts):
    for cloud in (clean, *perts):
        for a in cloud.values():
            pairwise_distances(a)


def clouds(arch: str, n: int, seed: int = 0):
    import torch

    from topolip.nets.models import build_model
    from topolip.nets.models.probes import collect_activations

    torch.manual_seed(seed)
    model = build_model(arch, **QUICK[arch]).eval()
    x = torch.rand(n, 1, 28, 28, generator=torch.Generator().manual_seed(seed))
    noise = (x + 0.1 * torch.randn(x.shape, generator=torch.Generator().manual_seed(1)))
    shift = (x + 0.05 * torch.rand(x.shape, generator=torch.Generator().manual_seed(2)))
    return (collect_activations(model, x), collect_activations(model, noise.clamp(0, 1)),
            collect_activations(model, shift.clamp(0, 1)))


def close_diagrams(a, b) -> bool:
    """Equal up to float32 rounding (ripser against GUDHI's float64): same number of points and
    a bottleneck distance within float32 rounding of the largest value (points are matched, not
    rows: births equal to float32 rounding can sort either way)."""
    from topolip.topology.distances import bottleneck

    for k in a.degrees:
        fa, fb = a[k].finite, b[k].finite
        if fa.shape != fb.shape or not np.array_equal(a[k].essential, b[k].essential):
            return False
        if len(fa) and bottleneck(fa, fb) > 2.0 ** -23 * float(np.abs(fa).max()):
            return False
    return True


def same_diagrams(a, b) -> bool:
    return all(np.array_equal(a[k].finite, b[k].finite)
               and np.array_equal(a[k].essential, b[k].essential) for k in a.degrees)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 800])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--archs", nargs="+", default=["vit", "resnet"])
    parser.add_argument("--jobs", type=int, default=None,
                        help="worker processes of new·N (default: the CPUs this process may use)")
    parser.add_argument("--gudhi", action="store_true",
                        help="also time new·N with GUDHI's Ripser port (backend='gudhi')")
    parser.add_argument("--cpu", action="store_true",
                        help="time process CPU seconds instead of wall seconds (one process "
                             "only: new·N is then not timed)")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    jobs = args.jobs or default_jobs(64)
    spec = TopoLipSpec()
    x = np.random.default_rng(0).normal(size=(PARALLEL_POINTS, 4))
    t0 = time.perf_counter()
    rips_diagrams_many([x] * jobs, n_jobs=jobs)  # start the worker processes
    print(f"clock: {'process CPU time' if args.cpu else 'wall time'}, median of {args.reps} "
          f"interleaved repetitions; 3 clouds per probe point (clean + 2 perturbations); "
          f"new·N with N={jobs} worker processes (started once in {time.perf_counter() - t0:.2f} "
          f"s, not included)")
    print(f"{'arch':8s} {'n':>5s} {'apart s':>8s} {'new·1 s':>8s} {'new·N s':>8s} {'gemm s':>8s} "
          f"{'apart/new·1':>11s} {'apart/new·N':>11s} {'apart/gudhi·N':>13s} {'new·1/gemm':>10s}"
          f"  diagrams")
    for arch in args.archs:
        for n in args.sizes:
            clean, *perts = clouds(arch, n)
            times = {"apart": [], "new1": [], "newN": [], "gudhi": [], "gemm": []}
            gspec = TopoLipSpec(backend="gudhi") if args.gudhi else None
            for _ in range(args.reps):  # interleaved: the machine may be shared
                t0 = clock()
                apart_dgms, apart_tables = apart_topolip(clean, perts, spec)
                t1 = clock()
                new_dgms, new_tables = new_topolip(clean, perts, spec, n_jobs=1)
                t2 = clock()
                par_dgms, par_tables = (new_topolip(clean, perts, spec, n_jobs=jobs)
                                        if not args.cpu else (new_dgms, new_tables))
                t3 = clock()
                g_dgms = (new_topolip(clean, perts, gspec, n_jobs=jobs)[0]
                          if gspec is not None and not args.cpu else None)
                t4 = clock()
                gemm_only(clean, perts)
                t5 = clock()
                for key, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4),
                                   strict=True):
                    times[key].append(dt)
            equal = all(same_diagrams(apart_dgms[k], new_dgms[k])
                        and same_diagrams(apart_dgms[k], par_dgms[k]) for k in clean)
            for apart_table, table, par in zip(apart_tables, new_tables, par_tables, strict=True):
                for col in ("delta", "delta_scale_free", "bottleneck", "topolip_scale_free"):
                    for t in (table, par):
                        equal &= np.allclose(apart_table[col], t[col], rtol=1e-12, atol=0,
                                             equal_nan=True)
            g_close = g_dgms is None or all(close_diagrams(apart_dgms[k], g_dgms[k]) for k in clean)
            o, w, p, gd, g = (statistics.median(t) for t in times.values())
            par_cols = ((f"{p:8.3f}", f"{o / p:10.2f}x") if not args.cpu
                        else ("       -", "          -"))
            gud_col = f"{o / gd:12.2f}x" if g_dgms is not None else "            -"
            g_note = "" if g_dgms is None else f" (gudhi: {'close' if g_close else 'DIFFER'})"
            print(f"{arch:8s} {n:5d} {o:8.3f} {w:8.3f} {par_cols[0]} {g:8.4f} {o / w:10.2f}x "
                  f"{par_cols[1]} {gud_col} {w / g:9.1f}x  {'equal' if equal else 'DIFFER'}"
                  f"{g_note}", flush=True)


if __name__ == "__main__":
    main()
