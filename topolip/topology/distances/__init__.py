r"""Exact distances between persistence diagrams: Wasserstein and bottleneck.

the method page (book/method.md) (the companion's formalization): :math:`W_{p,q}(D, D')`
is the ``p``-Wasserstein distance between diagrams with the :math:`\ell_q`
ground metric on the plane and free matching to the diagonal;
:math:`p = \infty` is the bottleneck distance. Defaults ``p = 1``,
``q = inf`` (GUDHI's defaults). Naming: the *order* ``p`` is GUDHI's
``order`` (called ``q`` in GUDHI's manual); the *ground metric* ``q`` is
GUDHI's ``internal_p``.

Policy, the same in every function here:

* essential points (death ``inf``) are matched among themselves, by birth;
  different counts give ``inf`` (never a large finite stand-in);
* finite points are matched to each other or to the diagonal;
* empty and one-sided inputs are answered before any solver is called;
* values are exact: an assignment solver (or POT's network simplex, checked
  for convergence) for finite ``p``, a threshold search with exact matching
  tests for ``p = inf``, and an exact dynamic program for degree-0 diagrams.

The module imports neither torch nor the rest of :mod:`topolip` (only
:mod:`topolip.topology.diagram`).

References
----------
.. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention
   and Convolution Models Using a Novel Metric", arXiv:2410.17628.
.. [2] D. Cohen-Steiner, H. Edelsbrunner, J. Harer, "Stability of persistence
   diagrams", Discrete Comput. Geom. 37 (2007).
.. [3] M. Kerber, D. Morozov, A. Nigmetov, "Geometry helps to compare
   persistence diagrams", ACM J. Exp. Algorithmics 22 (2017) (Hera).
.. [4] GUDHI, "Wasserstein distance" and "Bottleneck distance" user manuals,
   https://gudhi.inria.fr/python/latest/ .
"""

from __future__ import annotations

from topolip.topology.distances._checks import check_ground_metric, check_order
from topolip.topology.distances._combine import diagram_distance
from topolip.topology.distances._distance import bottleneck, wasserstein

__all__ = ["bottleneck", "check_ground_metric", "check_order", "diagram_distance", "wasserstein"]
