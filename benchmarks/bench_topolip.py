"""TopoLip of one model: today's path (one ``pdist`` per use) against the shared-matrix engine.

For a quick-profile ViT and ResNet (untrained, the quick profile's sizes, MNIST-shaped input)
the activation clouds of ``n`` random images and of two perturbations of them (Gaussian noise
and a small uniform shift, standing in for the attacks: the costs do not depend on which) are
collected once; then three things are timed on the same clouds:

- **old**: the per-layer TopoLip as it was computed before issue 13: the clean diagrams, then
  per perturbation the perturbed diagrams and the clean scale ``s_ℓ``, each computing its own
  ``pdist`` (:func:`old_rips_diagrams` is the former ``rips_diagrams``, kept here verbatim as
  the reference);
- **new·1**: the engine in one process: :func:`topolip.diagrams.pairwise_distances` once per
  cloud, shared by the diagrams and the scale (what :func:`topolip.experiments.measure_model`
  does), ripser called cloud after cloud;
- **new·N**: the same with ripser in ``N`` worker processes over the clouds
  (:func:`topolip.diagrams.rips_diagrams_many`, ``N`` = :func:`topolip.diagrams.default_jobs`,
  the CPUs this process may use); the workers are started before timing (a one-off cost,
  printed once);
- **gudhi·N**: new·N with ``backend="gudhi"`` (GUDHI's Ripser port, float64; opt-in, the
  default stays ripser.py);
- **gemm**: the distance matrices alone (the floor of any matrix-based engine).

Repetitions of the paths are interleaved (the machine may be shared) and medians reported,
with the ratios old/new and new/gemm; the diagrams of all ripser paths are compared (H0 and H1,
exact float64 equality required), and the tables to 1e-12; gudhi·N's diagrams to float32
rounding (ripser computes in float32 and may merge two distances GUDHI tells apart).

Usage: OMP_NUM_THREADS=1 python benchmarks/bench_topolip.py [--sizes 100 200 400 800]
[--reps 5] [--archs vit resnet] [--jobs N] [--gudhi] [--cpu]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np
import pandas as pd

from topolip import diagrams as dg
from topolip.metric import layer_diagrams, topolip_table
from topolip.spec import TopoLipSpec

PARALLEL_POINTS = dg.PARALLEL_MIN_POINTS

QUICK = {
    "vit": {"patch_size": 7, "num_layers": 4, "num_heads": 4, "hidden_dim": 64, "mlp_dim": 128},
    "resnet": {"width": 16, "blocks": [1, 1, 1, 1], "stem_kernel": 3},
}


def old_check_points(points, name="points"):
    """``check_points`` before issue 13: always a copy."""
    return np.array(dg.check_points(points, name))


def old_rips_diagrams(points, degrees=(0, 1)):
    """``topolip.diagrams.rips_diagrams`` before issue 13 (no subsampling): ``pdist`` inside."""
    import ripser
    from scipy.spatial.distance import pdist, squareform

    X = X_in = old_check_points(points)
    degs = dg.check_degrees(degrees)
    m = X.shape[0]
    c_in = dg._pow2_scale(np.abs(X).max())
    X = X / c_in
    dists = pdist(X)
    dg._check_merged(X, dists, c_in, dg._duplicate_pairs(X_in))
    maxdim = max(degs)
    if m == 2:
        d = float(dists[0])
        raw = [np.array([[0.0, d], [0.0, np.inf]]) if d > 0 else np.array([[0.0, np.inf]])]
        raw += [np.empty((0, 2))] * maxdim
    else:
        c_d = dg._pow2_scale(dists.max())
        dg._check_float32_spread(dists / c_d, c_in * c_d)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=dg._RIPSER_WIDE_WARNING,
                                    category=UserWarning)
            res = ripser.ripser(squareform(dists / c_d), maxdim=maxdim, distance_matrix=True)
        raw = [np.asarray(g, dtype=np.float64).reshape(-1, 2) * c_d for g in res["dgms"]]
        table = np.unique(np.concatenate([[0.0], dists]))
        raw = [np.column_stack([dg._snap(g[:, 0], table), dg._snap(g[:, 1], table)])
               for g in raw]
    raw = [dg._unscale(g, c_in, "a birth or death") for g in raw]
    out = []
    for k in degs:
        g = raw[k] if k < len(raw) else np.empty((0, 2))
        ess = np.isinf(g[:, 1])
        fin = g[~ess]
        fin = fin[np.lexsort((fin[:, 1], fin[:, 0]))] if len(fin) else fin
        out.append(dg.Diagram(finite=fin, essential=g[ess, 0], degree=k))
    return dg.RipsDiagrams(degrees=degs, diagrams=tuple(out), n_points=int(m))


def old_topolip_table(clean, perturbed, spec, *, clean_diagrams, rtol=1e-6):
    """``topolip.metric.topolip_table`` before issue 13, verbatim but for the names."""
    from scipy.spatial.distance import pdist

    from topolip.metric import EnvelopeViolation, _distance

    labels = list(clean)
    rows = []
    prev_sf = None
    for depth, label in enumerate(labels):
        a = old_check_points(clean[label], f"clean activations at {label!r}")
        b = old_check_points(perturbed[label], f"perturbed activations at {label!r}")
        dgm_a = clean_diagrams[label]
        dgm_b = old_rips_diagrams(b, degrees=spec.degrees)
        scale = float(np.median(pdist(old_check_points(a))))  # old median_pairwise_distance
        delta = _distance(dgm_a, dgm_b, spec)
        r_cover = 0.0
        row = {"layer": label, "depth": depth, "dim": a.shape[1], "scale": scale,
               "delta": delta, "delta_scale_free": delta / scale, "r_cover": r_cover}
        eps = float(np.linalg.norm(a - b, axis=1).max())
        bott = _distance(dgm_a, dgm_b, spec, p=math.inf, q=math.inf)
        envelope = 2 * eps + 2 * r_cover
        slack = 1e-5 * max(1.0, float(np.abs(a).max()), float(np.abs(b).max()))
        if bott > envelope + slack:
            raise EnvelopeViolation(label)
        row.update(eps=eps, bottleneck=bott, envelope=envelope)
        if prev_sf is None:
            ratio = ratio_sf = math.nan
            reason = "first probe point (no previous layer)"
        elif prev_sf < rtol:
            ratio = ratio_sf = math.nan
            reason = f"previous displacement below tolerance (scale-free {prev_sf:.3g} < {rtol:g})"
        elif math.isinf(delta) or math.isinf(rows[-1]["delta"]):
            ratio = ratio_sf = math.nan
            reason = "infinite displacement (essential classes differ in number)"
        else:
            ratio = delta / rows[-1]["delta"]
            ratio_sf = row["delta_scale_free"] / prev_sf
            reason = ""
        row.update(topolip=ratio, topolip_scale_free=ratio_sf, topolip_reason=reason)
        rows.append(row)
        prev_sf = row["delta_scale_free"]
    return pd.DataFrame(rows)


def old_topolip(clean, perts, spec):
    """Today's path as measure_model ran it: clean diagrams, then one table per perturbation."""
    dgms = {label: old_rips_diagrams(old_check_points(a, f"activations at {label!r}"),
                                     spec.degrees) for label, a in clean.items()}
    return dgms, [old_topolip_table(clean, pert, spec, clean_diagrams=dgms) for pert in perts]


def new_topolip(clean, perts, spec, n_jobs=1):  # spec.backend picks the persistence backend
    """The engine as :func:`topolip.experiments.measure_model` runs it."""
    clean_d = {label: dg.pairwise_distances(a) for label, a in clean.items()}
    dgms = layer_diagrams(clean, spec, distances=clean_d, n_jobs=n_jobs)
    tables = []
    for pert in perts:
        pert_d = {label: dg.pairwise_distances(a) for label, a in pert.items()}
        tables.append(topolip_table(clean, pert, spec, clean_diagrams=dgms,
                                    clean_distances=clean_d, perturbed_distances=pert_d,
                                    n_jobs=n_jobs))
    return dgms, tables


def gemm_only(clean, perts):
    for cloud in (clean, *perts):
        for a in cloud.values():
            dg.pairwise_distances(a)


def clouds(arch: str, n: int, seed: int = 0):
    import torch

    from topolip.models import build_model, collect_activations

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
    from topolip.distances import bottleneck

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
    jobs = args.jobs or dg.default_jobs(64)
    spec = TopoLipSpec()
    x = np.random.default_rng(0).normal(size=(PARALLEL_POINTS, 4))
    t0 = time.perf_counter()
    dg.rips_diagrams_many([x] * jobs, n_jobs=jobs)  # start the worker processes
    print(f"clock: {'process CPU time' if args.cpu else 'wall time'}, median of {args.reps} "
          f"interleaved repetitions; 3 clouds per probe point (clean + 2 perturbations); "
          f"new·N with N={jobs} worker processes (started once in {time.perf_counter() - t0:.2f} "
          f"s, not included)")
    print(f"{'arch':8s} {'n':>5s} {'old s':>8s} {'new·1 s':>8s} {'new·N s':>8s} {'gemm s':>8s} "
          f"{'old/new·1':>9s} {'old/new·N':>9s} {'old/gudhi·N':>9s} {'new·1/gemm':>10s}  diagrams")
    for arch in args.archs:
        for n in args.sizes:
            clean, *perts = clouds(arch, n)
            times = {"old": [], "new1": [], "newN": [], "gudhi": [], "gemm": []}
            gspec = TopoLipSpec(backend="gudhi") if args.gudhi else None
            for _ in range(args.reps):  # interleaved: the machine may be shared
                t0 = clock()
                old_dgms, old_rows = old_topolip(clean, perts, spec)
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
            equal = all(same_diagrams(old_dgms[k], new_dgms[k])
                        and same_diagrams(old_dgms[k], par_dgms[k]) for k in clean)
            for old_table, table, par in zip(old_rows, new_tables, par_tables, strict=True):
                for col in ("delta", "delta_scale_free", "bottleneck", "topolip_scale_free"):
                    for t in (table, par):
                        equal &= np.allclose(old_table[col], t[col], rtol=1e-12, atol=0,
                                             equal_nan=True)
            g_close = g_dgms is None or all(close_diagrams(old_dgms[k], g_dgms[k]) for k in clean)
            o, w, p, gd, g = (statistics.median(t) for t in times.values())
            par_cols = (f"{p:8.3f}", f"{o / p:8.2f}x") if not args.cpu else ("       -", "       -")
            gud_col = f"{o / gd:8.2f}x" if g_dgms is not None else "       -"
            g_note = "" if g_dgms is None else f" (gudhi: {'close' if g_close else 'DIFFER'})"
            print(f"{arch:8s} {n:5d} {o:8.3f} {w:8.3f} {par_cols[0]} {g:8.4f} {o / w:8.2f}x "
                  f"{par_cols[1]} {gud_col} {w / g:9.1f}x  {'equal' if equal else 'DIFFER'}"
                  f"{g_note}", flush=True)


if __name__ == "__main__":
    main()
