"""Validation and preparation of the inputs of :mod:`topolip.topology.distances`: the order ``p``,
the
ground metric ``q``, the solver name, and diagrams split into finite points and essential births.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from topolip.topology.diagram import Diagram, RipsDiagrams, check_diagram

METHODS = ("auto", "h0", "assignment", "pot")


def check_order(p) -> float:
    """Validate the Wasserstein order ``p``: a real ``p >= 1`` or ``math.inf`` (bottleneck).

    Parameters
    ----------
    p : float
        The order (GUDHI's ``order``).

    Returns
    -------
    float
        ``p`` as a float.

    Raises
    ------
    ValueError
        If ``p`` is not a real number (bools are refused), is NaN, or is below 1.
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or math.isnan(p) or p < 1:
        raise ValueError(
            f"p: expected the order p >= 1 (a real number) or math.inf (bottleneck), got "
            f"{p!r}; W_p is a metric only for p >= 1"
        )
    return float(p)


def check_ground_metric(q) -> float:
    """Validate the ground metric ``l_q`` on the plane: ``q`` in ``{1, 2, math.inf}``.

    Parameters
    ----------
    q : float
        The ground metric's exponent (GUDHI's ``internal_p``).

    Returns
    -------
    float
        ``q`` as a float.

    Raises
    ------
    ValueError
        If ``q`` is not 1, 2 or ``math.inf`` (bools are refused).
    """
    if (
        isinstance(q, bool)
        or not isinstance(q, numbers.Real)
        or float(q) not in (1.0, 2.0, math.inf)
    ):
        raise ValueError(
            f"q: expected the ground metric l_q with q in {{1, 2, math.inf}}, got {q!r} "
            f"(GUDHI's internal_p); use q=math.inf for the default l_inf ground metric"
        )
    return float(q)


def _as_array(dgm, name: str) -> tuple[np.ndarray, int | None]:
    if isinstance(dgm, Diagram):
        return dgm.array, dgm.degree
    if isinstance(dgm, RipsDiagrams):
        raise ValueError(
            f"{name}: expected one diagram, got a RipsDiagrams with degrees {dgm.degrees}; "
            f"pass res[k] for one degree, or use diagram_distance for several"
        )
    return check_diagram(dgm, name=name), None


def prepare(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Validate, split into finite off-diagonal points and sorted essential births."""
    A, ka = _as_array(a, "a")
    B, kb = _as_array(b, "b")
    if ka is not None and kb is not None and ka != kb:
        raise ValueError(
            f"a, b: expected diagrams of the same homological degree, got degree {ka} and "
            f"degree {kb}; pass a.array / b.array to compare them anyway"
        )
    ea = np.sort(A[np.isinf(A[:, 1]), 0])
    eb = np.sort(B[np.isinf(B[:, 1]), 0])
    A = A[np.isfinite(A[:, 1]) & (A[:, 1] > A[:, 0])]
    B = B[np.isfinite(B[:, 1]) & (B[:, 1] > B[:, 0])]
    return A, B, ea, eb


def scale(*arrays: np.ndarray) -> float:
    """A power of two near the largest finite magnitude (division by it is exact)."""
    mx = max((float(np.abs(x).max()) for x in arrays if x.size), default=0.0)
    if mx == 0.0 or not math.isfinite(mx):
        return 1.0
    return 2.0 ** math.floor(math.log2(mx))


def is_h0(A: np.ndarray, B: np.ndarray) -> bool:
    """All finite births 0 within float tolerance of the diagrams' scale."""
    vals = [x for x in (A, B) if x.size]
    if not vals:
        return True
    scale = max(float(np.abs(x).max()) for x in vals)
    tol = 64.0 * np.finfo(np.float64).eps * scale
    return all(float(np.abs(x[:, 0]).max()) <= tol for x in vals)


def check_method(method: str) -> str:
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    return method
