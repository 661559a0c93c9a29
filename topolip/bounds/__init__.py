"""Lipschitz bounds for every probed layer, and their empirical check (book/method.md).

Public entry points:

- :func:`lipschitz_bound` ``(module, inputs) -> float``: a certified upper bound on the
  Lipschitz constant of a supported module (Euclidean norm of the flattened sample), global where
  one exists, local around the observed ``inputs`` where it does not (LayerNorm, dot-product
  attention);
- :func:`lipschitz_estimate` ``(module, inputs) -> float``: the empirical local constant, a
  lower bound (power iteration on ``JᵀJ`` with ``torch.func``);
- :func:`layer_bounds` ``(model, x[, x_tilde]) -> DataFrame``: both, per probe point of a model
  built by :func:`topolip.nets.models.build_model`, with the chained product and the certified
  displacement chain ``ε_ℓ ≤ Lip(f_ℓ) ε_{ℓ−1}``.

The formulas, derivations and sources are in the docstrings of the per-concept modules
(:mod:`.conv`, :mod:`.norms`, :mod:`.activations`, :mod:`.attention`, :mod:`.pooling`) and in
the theory notebook ``notebooks/00_theory.py``.

The package re-exports nothing: each name has one import path, the module that defines it
(``from topolip.bounds.<module> import <name>``; :data:`topolip.API` lists the curated ones).
"""
