"""Several homological degrees combined into one distance (book/method.md)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

from topolip.topology.diagram import RipsDiagrams
from topolip.topology.distances._checks import check_order
from topolip.topology.distances._distance import wasserstein
from topolip.topology.rips import check_degrees


def _per_degree(dgms, name: str) -> dict[int, object]:
    if isinstance(dgms, RipsDiagrams):
        return dict(zip(dgms.degrees, dgms.diagrams, strict=True))
    if isinstance(dgms, Mapping):
        out = {}
        for k, v in dgms.items():
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
                raise ValueError(f"{name}: expected non-negative int degrees as keys, got {k!r}")
            out[int(k)] = v
        return out
    if isinstance(dgms, Sequence) and not isinstance(dgms, str | bytes):
        return dict(enumerate(dgms))
    raise ValueError(
        f"{name}: expected a RipsDiagrams, a mapping degree -> diagram, or a list of diagrams "
        f"indexed by degree (ripser's 'dgms'), got {type(dgms).__name__}"
    )


def diagram_distance(
    dgms_a, dgms_b, p: float = 1.0, q: float = math.inf, degrees=None, *, method: str = "auto"
) -> float:
    r"""Distance between the diagrams of several degrees, combined as in book/method.md.

    Parameters
    ----------
    dgms_a, dgms_b : RipsDiagrams, mapping int -> diagram, or list of diagrams
        Diagrams per homological degree (a list is indexed by degree, like
        ripser's ``dgms``). Each diagram is an ``(n, 2)`` array or a
        :class:`~topolip.topology.diagram.Diagram`.
    p : float, default=1.0
        Order, ``p >= 1`` or ``math.inf``; GUDHI's ``order``.
    q : {1, 2, math.inf}, default=math.inf
        Ground metric :math:`\ell_q`; GUDHI's ``internal_p``.
    degrees : int, sequence of int or None, default=None
        Degrees to combine (distinct, non-negative; see
        :func:`topolip.topology.rips.check_degrees`); ``None`` means every degree of ``dgms_a``,
        which must then be exactly the degrees of ``dgms_b``.
    method : str, default="auto"
        Passed to :func:`wasserstein`.

    Returns
    -------
    float
        :math:`\bigl(\sum_k W_{p,q}(D_k, D'_k)^p\bigr)^{1/p}`, or
        :math:`\max_k W_{\infty,q}(D_k, D'_k)` for ``p = inf``.

    Raises
    ------
    ValueError
        If ``degrees`` are not distinct non-negative ints, a requested degree is missing on
        one side, the degree sets differ (``degrees=None``), no degree is selected, or any
        argument of :func:`wasserstein` is invalid.

    Notes
    -----
    The combination is the :math:`\ell_p` norm of the per-degree distances,
    which is the ``p``-Wasserstein distance between the disjoint unions of
    the diagrams when points may only be matched within a degree.

    References
    ----------
    .. [1] B. Chen, arXiv:2410.17628 (TopoLip); the method page (book/method.md).

    Examples
    --------
    >>> a = {0: [[0, 1], [0, float("inf")]], 1: [[0.5, 0.9]]}
    >>> b = {0: [[0, 2], [0, float("inf")]], 1: []}
    >>> diagram_distance(a, b)  # W_0 = 1, W_1 = 0.2
    1.2
    >>> diagram_distance(a, b, p=math.inf)
    1.0
    """
    p = check_order(p)
    da = _per_degree(dgms_a, "dgms_a")
    db = _per_degree(dgms_b, "dgms_b")
    if degrees is None:
        if set(da) != set(db):
            raise ValueError(
                f"degrees: dgms_a has degrees {sorted(da)} and dgms_b has {sorted(db)}; "
                f"pass degrees=... to choose the common ones"
            )
        degs = sorted(da)
    else:
        degs = list(check_degrees(degrees))
        missing = [k for k in degs if k not in da or k not in db]
        if missing:
            raise ValueError(
                f"degrees: requested {degs}, but degree(s) {missing} missing in dgms_a "
                f"(has {sorted(da)}) or dgms_b (has {sorted(db)})"
            )
    if not degs:
        raise ValueError("degrees: expected at least one degree, got none in either diagram set")
    parts = [wasserstein(da[k], db[k], p=p, q=q, method=method) for k in degs]
    if p == math.inf:
        return float(max(parts))
    if any(math.isinf(w) for w in parts):
        return math.inf
    s = max(parts)
    if s == 0.0:
        return 0.0
    return float(s * math.fsum((w / s) ** p for w in parts) ** (1.0 / p))
