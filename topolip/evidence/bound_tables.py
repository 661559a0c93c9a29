"""The tables of the bounds chapter (``notebooks/05_bounds_vs_measured.py``), torch-free.

:func:`topolip.experiments.model_measurement.measure_bounds` writes ``tables/bounds.csv`` (per
model, the bounds of every segment at the clean batch, ``perturbation == LOCAL``, and the certified
chains of the paired perturbations); these functions join it with ``tables/topolip.csv`` and
summarise it:

- :func:`bounds_vs_measured`: the bound ``2 L_ℓ`` next to the measured growth
  ``W_{∞,∞,ℓ} / ε_{ℓ−1}``, with the stability theorem checked on every row;
- :func:`bound_slack`, :func:`chain_growth`: how far the per-layer and the chained bounds
  exceed the measurement;
- :func:`bound_looseness`: bound / estimate per kind of segment.

Pandas in, pandas out: no torch, so :mod:`topolip.report.figures` can redraw the chapter's figure
from
the saved tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topolip import roster
from topolip.schema import LOCAL, require_columns

__all__ = ["bound_looseness", "bound_slack", "bounds_vs_measured", "chain_growth"]

#: Keys shared by ``tables/bounds.csv`` and ``tables/topolip.csv``.
KEYS = ["arch", "seed", "perturbation", "layer"]


def bounds_vs_measured(bounds: pd.DataFrame, measured: pd.DataFrame, *, rtol: float = 1e-3,
                       atol: float = 1e-5) -> pd.DataFrame:
    r"""The certified chains of ``bounds`` joined with the TopoLip rows they recreate.

    Parameters
    ----------
    bounds : pandas.DataFrame
        ``tables/bounds.csv``: :func:`topolip.bounds.segments.layer_bounds` rows with ``arch``,
        ``seed`` and ``perturbation`` (rows of :data:`topolip.schema.LOCAL` are left out), among
        them
        ``bound``, ``eps`` and ``envelope_chain``.
    measured : pandas.DataFrame
        ``tables/topolip.csv``: with ``arch``, ``seed``, ``perturbation``, ``layer``,
        ``eps``, ``bottleneck`` (``W_{∞,∞,ℓ}``) and ``envelope`` (``2ε_ℓ``, plus twice the
        covering radius when subsampled).
    rtol, atol : float
        Tolerance of the agreement of the recreated ``eps`` with the measured one.

    Returns
    -------
    pandas.DataFrame
        One row per chain row, sorted by ``arch``, ``seed``, ``perturbation``, ``depth``: the
        columns of ``bounds``, those of ``measured`` (suffix ``_measured`` where shared), and
        ``ratio`` (``W_{∞,∞,ℓ} / ε_{ℓ−1}``, NaN at the input; it replaces the bound/estimate
        ratio of ``bounds``) and ``two_lip`` (``2 L_ℓ``, margin ``ε_{ℓ−1}``).

    Raises
    ------
    ValueError
        If a column is missing, a chain row has no TopoLip row (or several), the recreated
        ``eps`` differs from the measured one (the perturbations are not those of the TopoLip
        table), or a row breaks the stability theorem
        ``W_{∞,∞,ℓ} ≤ 2ε_ℓ ≤ 2 L_ℓ ε_{ℓ−1}`` (a bug).

    Notes
    -----
    With ``ε_ℓ = max_i ‖h_ℓ(x_i) − h_ℓ(x̃_i)‖``, stability of persistence gives
    ``W_{∞,∞,ℓ} ≤ 2ε_ℓ`` and a bound ``L_ℓ`` with margin ``ε_{ℓ−1}`` gives
    ``W_{∞,∞,ℓ} / ε_{ℓ−1} ≤ 2L_ℓ``. It is not a bound on TopoLip ``Δ_ℓ / Δ_{ℓ−1}``.

    References
    ----------
    .. [1] D. Cohen-Steiner, H. Edelsbrunner and J. Harer, "Stability of persistence
       diagrams", Discrete Comput. Geom. 37 (2007).
    .. [2] B. Chen, "Is smoothness the key to robustness?", arXiv:2410.17628.

    Examples
    --------
    >>> b = pd.DataFrame({"arch": "vit", "seed": 0, "perturbation": "fgsm",
    ...                   "layer": ["input", "embed"], "depth": [0, 1],
    ...                   "bound": [float("nan"), 2.0], "eps": [0.1, 0.15],
    ...                   "envelope_chain": [0.2, 0.4]})
    >>> m = b[["arch", "seed", "perturbation", "layer"]].assign(
    ...     eps=[0.1, 0.15], bottleneck=[0.05, 0.1], envelope=[0.2, 0.3])
    >>> bounds_vs_measured(b, m)[["ratio", "two_lip"]].values.tolist()
    [[nan, nan], [1.0, 4.0]]
    """
    require_columns(bounds, KEYS + ["depth", "bound", "eps", "envelope_chain"], "bounds")
    require_columns(measured, KEYS + ["eps", "bottleneck", "envelope"], "measured")
    chains = bounds[bounds["perturbation"] != LOCAL]
    try:
        joined = chains.merge(measured, on=KEYS, suffixes=("", "_measured"),
                              validate="one_to_one")
    except pd.errors.MergeError as err:
        raise ValueError(f"measured must hold one row per (arch, seed, perturbation, layer) of "
                         f"bounds: {err}") from None
    if len(joined) != len(chains):
        raise ValueError(f"only {len(joined)} of the {len(chains)} chain rows of bounds have a "
                         "row in measured: rerun 02_topolip and 05 with the same parameters")
    close = np.isclose(joined["eps"], joined["eps_measured"], rtol=rtol, atol=atol)
    if not close.all():
        raise ValueError("the recreated eps of bounds differs from the measured eps in rows "
                         f"{joined.loc[~close, KEYS].to_dict('records')}: the perturbations "
                         "are not those of the TopoLip table")
    broken = ~((joined["bottleneck"] <= joined["envelope_chain"] * (1 + 1e-6) + 1e-5)
               & (joined["bottleneck"] <= joined["envelope"] + 1e-5))
    if broken.any():
        raise ValueError("W_inf,inf exceeds its envelope (a bug) in rows "
                         f"{joined.loc[broken, KEYS].to_dict('records')}")
    joined = joined.sort_values(["arch", "seed", "perturbation", "depth"])
    eps_prev = joined.groupby(["arch", "seed", "perturbation"])["eps_measured"].shift(1)
    joined["ratio"] = joined["bottleneck"] / eps_prev            # W_inf,inf,l / eps_{l-1}
    joined["two_lip"] = 2 * joined["bound"]                      # 2 L_l, margin eps_{l-1}
    subsample = joined["envelope"] - 2 * joined["eps_measured"]  # 2 r_cover when subsampled
    ok = joined["ratio"].isna() | (joined["bottleneck"] <= joined["two_lip"] * eps_prev
                                    + subsample + 1e-5)
    if not ok.all():
        raise ValueError("W_inf,inf,l / eps_{l-1} exceeds 2 L_l (a bug) in rows "
                         f"{joined.loc[~ok, KEYS].to_dict('records')}")
    return joined


def bound_slack(joined: pd.DataFrame) -> pd.Series:
    """Per probed layer past the input: the factor ``2 L_ℓ / (W_{∞,∞,ℓ} / ε_{ℓ−1})``.

    Parameters
    ----------
    joined : pandas.DataFrame
        :func:`bounds_vs_measured`'s table (``depth``, ``ratio``, ``two_lip``).

    Returns
    -------
    pandas.Series
        ``two_lip / ratio`` on the rows with ``depth > 0`` and a positive ratio (a zero
        displacement has no slack), indexed as ``joined``; at least 1 on valid tables.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> t = pd.DataFrame({"depth": [0, 1, 2], "ratio": [float("nan"), 0.5, 0.0],
    ...                   "two_lip": [float("nan"), 4.0, 3.0]})
    >>> bound_slack(t).tolist()
    [8.0]
    """
    require_columns(joined, ["depth", "ratio", "two_lip"], "joined")
    body = joined[joined["depth"] > 0].dropna(subset=["ratio"])
    body = body[body["ratio"] > 0]
    return body["two_lip"] / body["ratio"]


def chain_growth(joined: pd.DataFrame) -> pd.DataFrame:
    """Per architecture: the chained bound ``Π L_ℓ`` against the measured ``ε_L / ε_0``.

    Parameters
    ----------
    joined : pandas.DataFrame
        :func:`bounds_vs_measured`'s table (``arch``, ``depth``, ``eps_measured``,
        ``chained_bound``), rows of each model in the same order at every depth.

    Returns
    -------
    pandas.DataFrame
        Indexed by ``arch`` (in order of appearance): ``chained`` (the largest chained bound
        over models, perturbations and depths), ``measured`` (the largest ``ε_L / ε_0`` over
        models and perturbations, ``L`` the last depth) and ``slack`` (``chained / measured``).

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": "vit", "depth": [0, 1], "eps_measured": [0.1, 0.2],
    ...                   "chained_bound": [1.0, 8.0]})
    >>> chain_growth(t).to_dict("index")
    {'vit': {'chained': 8.0, 'measured': 2.0, 'slack': 4.0}}
    """
    require_columns(joined, ["arch", "depth", "eps_measured", "chained_bound"], "joined")
    growth = []
    for arch, a in joined.groupby("arch", sort=False):
        last = a[a["depth"] == a["depth"].max()]
        measured_growth = (last["eps_measured"].to_numpy()
                           / a[a["depth"] == 0]["eps_measured"].to_numpy()).max()
        growth.append({"arch": arch, "chained": a["chained_bound"].max(),
                       "measured": measured_growth})
    growth = pd.DataFrame(growth, columns=["arch", "chained", "measured"]).set_index("arch")
    growth["slack"] = growth["chained"] / growth["measured"]
    return growth


def _arch_names(archs: pd.Series) -> str:
    return ", ".join(roster.arch_label(v) for v in sorted(set(archs)))


def bound_looseness(bounds: pd.DataFrame) -> pd.DataFrame:
    """Bound / estimate per kind of segment, at the clean batch (margin 0).

    Parameters
    ----------
    bounds : pandas.DataFrame
        ``tables/bounds.csv`` (its :data:`topolip.schema.LOCAL` rows are used: ``arch``, ``depth``,
        ``segment``, ``layer``, ``bound``, ``estimate``, ``ratio``).

    Returns
    -------
    pandas.DataFrame
        One row per ``segment``, by increasing ``max_ratio``: ``segment``, ``archs`` (the
        architectures' display names), ``layers`` (distinct probe names), ``max_ratio``,
        ``median_ratio`` and ``max_bound``.

    Raises
    ------
    ValueError
        If a column is missing or an estimate exceeds its bound (a bug).

    Examples
    --------
    >>> b = pd.DataFrame({"arch": "vit", "perturbation": LOCAL, "depth": [0, 1, 2],
    ...                   "segment": ["", "Linear", "Linear"], "layer": ["in", "a", "b"],
    ...                   "bound": [float("nan"), 2.0, 3.0], "estimate": [float("nan"), 1, 3],
    ...                   "ratio": [float("nan"), 2.0, 1.0]})
    >>> bound_looseness(b)[["segment", "layers", "max_ratio", "median_ratio"]].values.tolist()
    [['Linear', 2, 2.0, 1.5]]
    """
    require_columns(bounds, ["arch", "perturbation", "depth", "segment", "layer", "bound",
                             "estimate", "ratio"], "bounds")
    local = bounds[bounds["perturbation"] == LOCAL]
    segments = local[local["depth"] > 0]
    bad = segments["estimate"] > segments["bound"] * (1 + 1e-6)
    if bad.any():
        raise ValueError("an estimate exceeds its bound (a bug) in rows "
                         f"{segments.loc[bad, ['arch', 'layer']].to_dict('records')}")
    return (segments.groupby(["segment"])
            .agg(archs=("arch", _arch_names), layers=("layer", "nunique"),
                 max_ratio=("ratio", "max"), median_ratio=("ratio", "median"),
                 max_bound=("bound", "max"))
            .sort_values("max_ratio").reset_index())
