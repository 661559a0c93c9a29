"""Tables of the literature chapter's topology rows (issue 28, rows 3, 5, 6).

One model in, tidy rows out (``arch``, ``seed`` columns); the verdicts are in
:mod:`topolip.evidence.literature_topology`.

References
----------
.. [1] G. Naitzat, A. Zhitnikov, L.-H. Lim, "Topology of deep neural networks",
   arXiv:2004.06093 (per-class Betti numbers of activations in MLPs, ReLU vs tanh).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import torch
from scipy import stats as sps
from torch import nn

from topolip.nets.models.probes import collect_activations, probe_labels
from topolip.perturbations.attacks import fgsm
from topolip.topology.points import pairwise_distances
from topolip.topology.rips import rips_diagrams

__all__ = ["adv_share_rows", "betti_population", "betti_table", "betti_at_scale",
           "h0_lifetimes", "knn_scale", "last_probe", "mlp", "ood_lifetime_rows",
           "total_persistence", "train_mlp", "trained_model_topology"]


def knn_scale(points, k: int = 5, factor: float = 2.0) -> float:
    """The scale rule: ``factor`` x the median distance of a point to its ``k``-th neighbour.

    A stand-in for Naitzat et al.'s k-NN graph scale (they compute homology of a k-NN graph's
    flag complex; we take the Rips complex at a radius tied to the same k-NN distances).

    Parameters
    ----------
    points : array_like of shape (m, d)
        The cloud, ``m > k``.
    k : int, default=5
        The neighbour whose distance sets the scale.
    factor : float, default=2.0
        Multiplier of the median k-th neighbour distance.

    Returns
    -------
    float, in the cloud's units.

    Raises
    ------
    ValueError if ``m <= k``.
    """
    d = pairwise_distances(points)
    if d.shape[0] <= k:
        raise ValueError(f"need more than k={k} points, got {d.shape[0]}")
    return float(factor * np.median(np.sort(d, axis=1)[:, k]))


def betti_at_scale(points, scale: float) -> tuple[int, int]:
    """Betti numbers (beta0, beta1) of the Rips complex at ``scale``: bars alive at ``scale``.

    A bar ``[b, d)`` counts when ``b <= scale < d`` (ripser's convention: a simplex enters at
    its diameter).

    Examples
    --------
    >>> betti_at_scale([[0.0, 0.0], [1.0, 0.0], [10.0, 0.0]], 2.0)
    (2, 0)
    """
    res = rips_diagrams(np.asarray(points, float), degrees=(0, 1))
    out = []
    for k in (0, 1):
        a = res[k].array
        out.append(int(((a[:, 0] <= scale) & (a[:, 1] > scale)).sum()) if len(a) else 0)
    return out[0], out[1]


def h0_lifetimes(points) -> np.ndarray:
    """Finite H0 lifetimes (death - birth) of a cloud, shape (m - 1,), in its units."""
    a = rips_diagrams(np.asarray(points, float), degrees=(0,))[0].array
    a = a[np.isfinite(a[:, 1])]
    return a[:, 1] - a[:, 0]


def total_persistence(points, degrees: Sequence[int] = (0, 1)) -> float:
    """Sum of finite lifetimes over ``degrees`` of a cloud's Rips diagrams, in its units."""
    res = rips_diagrams(np.asarray(points, float), degrees=tuple(degrees))
    tot = 0.0
    for k in degrees:
        a = res[k].array
        a = a[np.isfinite(a[:, 1])]
        tot += float((a[:, 1] - a[:, 0]).sum())
    return tot


def mlp(d_in: int, n_out: int, *, width: int = 16, depth: int = 6,
        activation: str = "relu") -> nn.Sequential:
    """An MLP of ``depth`` hidden layers of ``width`` units (Naitzat et al.'s narrow deep nets)."""
    act = {"relu": nn.ReLU, "tanh": nn.Tanh}[activation]
    layers, d = [], d_in
    for _ in range(depth):
        layers += [nn.Linear(d, width), act()]
        d = width
    layers.append(nn.Linear(d, n_out))
    return nn.Sequential(*layers)


def train_mlp(x: torch.Tensor, y: torch.Tensor, *, activation: str, seed: int, width: int = 16,
              depth: int = 6, epochs: int = 30, lr: float = 1e-2) -> nn.Sequential:
    """Train :func:`mlp` briefly with Adam, full batch; ``x`` (n, d) float, ``y`` (n,) long."""
    torch.manual_seed(seed)
    model = mlp(x.shape[1], int(y.max()) + 1, width=width, depth=depth, activation=activation)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


@torch.no_grad()
def betti_table(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor, *, arch: str, seed: int,
                k: int = 5, factor: float = 2.0) -> pd.DataFrame:
    """Per-class Betti numbers of each hidden layer's activations (layer 0 = input).

    Returns one row per layer x label: ``arch, seed, layer, label, n, scale, betti0, betti1``;
    the scale is :func:`knn_scale` of that class's cloud at that layer.
    """
    clouds, h = [x], x
    for mod in model[:-1]:
        h = mod(h)
        if not isinstance(mod, nn.Linear):
            clouds.append(h)
    rows = []
    for layer, c in enumerate(clouds):
        for label in torch.unique(y).tolist():
            p = c[y == label].double().numpy()
            s = knn_scale(p, k, factor)
            b0, b1 = betti_at_scale(p, s)
            rows.append(dict(arch=arch, seed=seed, layer=layer, label=int(label), n=len(p),
                             scale=s, betti0=b0, betti1=b1))
    return pd.DataFrame(rows)


def ood_lifetime_rows(features: Callable[[torch.Tensor], torch.Tensor], x_test: torch.Tensor,
                      ood: dict[str, torch.Tensor], *, arch: str, seed: int) -> pd.DataFrame:
    """One-sided Mann--Whitney of H0 lifetimes, OOD vs test, of ``features`` (penultimate layer).

    Returns one row per OOD set: ``arch, seed, ood_set, auc`` (U / (n_ood n_test); > 0.5 means
    OOD lifetimes longer), ``p_value`` (alternative "greater"), ``median_ood``, ``median_test``.
    """
    with torch.no_grad():
        lt = h0_lifetimes(features(x_test).flatten(1).double().numpy())
        rows = []
        for name, xo in ood.items():
            lo = h0_lifetimes(features(xo).flatten(1).double().numpy())
            r = sps.mannwhitneyu(lo, lt, alternative="greater")
            rows.append(dict(arch=arch, seed=seed, ood_set=name,
                             auc=float(r.statistic) / (len(lo) * len(lt)), p_value=float(r.pvalue),
                             median_ood=float(np.median(lo)), median_test=float(np.median(lt))))
    return pd.DataFrame(rows)


def adv_share_rows(features: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor,
                   x_adv: torch.Tensor, *, arch: str, seed: int,
                   fractions: Sequence[float] = tuple(np.round(np.arange(11) / 10, 1)),
                   degrees: Sequence[int] = (0, 1), order_seed: int = 0) -> pd.DataFrame:
    """Total persistence of batches whose ``round(f m)`` images (seeded order) are adversarial.

    ``x``, ``x_adv`` : (m, ...) clean images and their adversarial counterparts. Returns one
    row per fraction: ``arch, seed, fraction, n_adv, total_persistence``.
    """
    m = len(x)
    order = np.random.default_rng(order_seed).permutation(m)
    rows = []
    with torch.no_grad():
        fc = features(x).flatten(1).double().numpy()
        fa = features(x_adv).flatten(1).double().numpy()
    for f in fractions:
        n_adv = int(round(f * m))
        cloud = fc.copy()
        cloud[order[:n_adv]] = fa[order[:n_adv]]
        rows.append(dict(arch=arch, seed=seed, fraction=float(f), n_adv=n_adv,
                         total_persistence=total_persistence(cloud, degrees)))
    return pd.DataFrame(rows)


def betti_population(x: torch.Tensor, y: torch.Tensor, *, seeds: Sequence[int], epochs: int,
                     activations: Sequence[str] = ("relu", "tanh")) -> pd.DataFrame:
    """Row 3's table: :func:`betti_table` of a :func:`train_mlp` per seed and activation.

    ``x`` (n, d) float, ``y`` (n,) long class labels. Returns the concatenated rows
    (``arch`` is the activation name), seed-major.
    """
    if len(seeds) == 0:
        raise ValueError("betti_population needs at least one seed")
    return pd.concat([betti_table(train_mlp(x, y, activation=a, seed=int(s), epochs=epochs),
                                  x, y, arch=a, seed=int(s))
                      for s in seeds for a in activations], ignore_index=True)


def last_probe(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """The features at ``model``'s last probe point (its penultimate representation).

    Returns ``f(x) -> (m, d)`` float64 tensor for images ``x`` of shape (m, C, H, W) in [0, 1]
    (:func:`topolip.nets.models.probes.collect_activations`, eval mode).
    """
    label = probe_labels(model)[-1]
    return lambda z: torch.from_numpy(collect_activations(model, z)[label])


def trained_model_topology(models, x: torch.Tensor, y: torch.Tensor,
                           ood: dict[str, torch.Tensor], eps: float,
                           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rows 5 and 6's tables for trained models, at their last probe.

    Parameters
    ----------
    models : mapping (arch, seed) -> nn.Module
        Trained classifiers with probe points.
    x : torch.Tensor of shape (m, C, H, W)
        Test images in [0, 1].
    y : torch.Tensor of shape (m,)
        Their labels (int64).
    ood : mapping name -> tensor (k, C, H, W)
        One batch per OOD set (:func:`topolip.perturbations.ood_sets.load_ood_batches`).
    eps : float
        L-inf radius of the FGSM images of row 6 (pixels in [0, 1]); must be > 0.

    Returns
    -------
    (DataFrame, DataFrame)
        :func:`ood_lifetime_rows` and :func:`adv_share_rows` of every model, concatenated.
    """
    if not eps > 0:
        raise ValueError(f"eps must be > 0 (pixels in [0, 1]), got {eps!r}")
    ood_rows, adv_rows = [], []
    for (arch, seed), model in models.items():
        model.eval()
        features = last_probe(model)
        ood_rows.append(ood_lifetime_rows(features, x, ood, arch=arch, seed=seed))
        adv_rows.append(adv_share_rows(features, x, fgsm(model, x, y, eps), arch=arch,
                                       seed=seed))
    return pd.concat(ood_rows, ignore_index=True), pd.concat(adv_rows, ignore_index=True)
