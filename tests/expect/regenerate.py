"""The expected outputs of the engine, stored under ``tests/expect/`` (torchvision's golden-output
habit), and the code that computes them.

Each case below computes, from small deterministic inputs and through public functions only, one or
two tables; ``tests/test_model_measurement.py`` computes them again and compares them with the
stored files (integers, booleans and text exactly, floats to the case's ``rtol``). An internal
refactor that keeps the numbers passes; one that changes them fails, naming the file, the column and
the first differing rows.

Regenerate the files only when a change of the numbers is intended (and say why in the commit
message), from the repository root::

    PYTHONPATH=. python -m tests.expect.regenerate            # every case
    PYTHONPATH=. python -m tests.expect.regenerate rips_diagrams

Files: ``rips_diagrams.json`` (:func:`topolip.topology.rips.rips_diagrams` of random clouds whose
sizes, dimensions, scales and offsets vary, with duplicate rows), ``topolip_table.csv``
(:func:`topolip.topology.metric.topolip_table` of float64 activation clouds), and
``measure_model_layers.csv`` / ``measure_model_summary.csv``
(:func:`topolip.experiments.model_measurement.measure_model` of a seeded untrained convolution stack
on random images labelled by its own predictions: per-layer rows, noise floor, accuracies and the
baseline measures).
"""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

EXPECT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Case:
    """One case: ``compute()`` returns ``{file name: table}`` (a DataFrame for ``.csv``, a
    JSON-able value for ``.json``), compared with the stored files to ``rtol``."""

    compute: Callable[[], dict]
    files: tuple[str, ...]
    rtol: float


def clouds(seed: int = 1, n: int = 6):
    """Random clouds: sizes, dimensions, scales and offsets far from the origin vary; every
    third has a duplicate row."""
    rng = np.random.default_rng(seed)
    for t in range(n):
        m, d = int(rng.integers(3, 24)), int(rng.integers(1, 200))
        x = rng.normal(size=(m, d)) * 10.0 ** rng.uniform(-6, 6)
        x += rng.normal(size=d) * np.abs(x).max() * 10.0 ** rng.uniform(-2, 2)
        if t % 3 == 0:
            x[1] = x[0]
        yield x


def _rips_diagrams() -> dict:
    from topolip.topology.rips import rips_diagrams

    out = []
    for x in clouds():
        dg = rips_diagrams(x, (0, 1))
        out.append({"n_points": dg.n_points, "dim": int(x.shape[1]), "degrees": list(dg.degrees),
                    "diagrams": {str(k): {"finite": dg[k].finite.tolist(),
                                          "essential": dg[k].essential.tolist()}
                                 for k in dg.degrees}})
    return {"rips_diagrams.json": out}


def _activations(seed: int) -> tuple[dict, dict]:
    """Clean and perturbed float64 clouds of four 'layers' of 20 points (widths 5 to 40)."""
    rng = np.random.default_rng(seed)
    clean, pert = {}, {}
    x = rng.normal(size=(20, 5))
    for depth, width in enumerate((5, 40, 12, 3)):
        w = rng.normal(size=(x.shape[1], width)) / math.sqrt(x.shape[1])
        x = np.tanh(x @ w) if depth else x
        clean[f"layer{depth}"] = x
        pert[f"layer{depth}"] = x + 0.05 * (depth + 1) * rng.normal(size=x.shape)
    return clean, pert


def _topolip_table() -> dict:
    from topolip.topology.metric import topolip_table
    from topolip.topology.spec import TopoLipSpec

    clean, pert = _activations(7)
    tables = [topolip_table(clean, pert, spec).assign(spec=name) for name, spec in
              (("default", TopoLipSpec()), ("p2_q2_h0", TopoLipSpec(degrees=(0,), p=2, q=2)))]
    return {"topolip_table.csv": pd.concat(tables, ignore_index=True)}


def _measure_model() -> dict:
    import torch

    from topolip.experiments.model_measurement import measure_model
    from topolip.nets.models import build_model
    from topolip.topology.spec import TopoLipSpec

    torch.manual_seed(0)
    model = build_model("conv_stack", num_layers=2, channels=4).eval()
    g = torch.Generator().manual_seed(0)
    x = torch.rand(60, 1, 28, 28, generator=g)
    with torch.no_grad():  # the model's own predictions as labels: clean accuracy 1
        y = model(x).argmax(1)
    m = measure_model(model, x[:30], y[:30], {"gaussian_noise": 2, "contrast": 3},
                      TopoLipSpec(), n_points=30, x_floor=x[30:], seed=0,
                      estimate_samples=2, estimate_n_iter=2, num_classes=10)
    return {"measure_model_layers.csv": m.layers, "measure_model_summary.csv": m.summary}


#: The cases; floats of numpy-only cases are compared to 1e-10, those that go through a float32
#: network to 1e-6 (a different CPU may round its convolutions differently).
CASES: dict[str, Case] = {
    "rips_diagrams": Case(_rips_diagrams, ("rips_diagrams.json",), 1e-10),
    "topolip_table": Case(_topolip_table, ("topolip_table.csv",), 1e-10),
    "measure_model": Case(_measure_model,
                          ("measure_model_layers.csv", "measure_model_summary.csv"), 1e-6),
}


def to_text(name: str, value) -> str:
    """The stored text of ``value`` for the file ``name`` (floats to 17 significant digits)."""
    if name.endswith(".csv"):
        return value.to_csv(index=False, float_format="%.17g", lineterminator="\n")
    if name.endswith(".json"):
        return json.dumps(value, indent=1, sort_keys=True) + "\n"
    raise ValueError(f"{name}: expected a .csv or .json file name")


def read_csv_text(text: str) -> pd.DataFrame:
    """A stored CSV back as a table (empty fields of text columns are NaN, as pandas reads)."""
    return pd.read_csv(io.StringIO(text))


def regenerate(names=None) -> list[Path]:
    """Compute the cases ``names`` (default all) and write their files; the paths written."""
    names = list(CASES) if not names else list(names)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        raise ValueError(f"unknown case(s) {unknown}; known: {list(CASES)}")
    written = []
    for name in names:
        case = CASES[name]
        out = case.compute()
        if set(out) != set(case.files):
            raise RuntimeError(f"case {name!r} computed {sorted(out)}, declared {case.files}")
        for file in case.files:
            path = EXPECT / file
            path.write_text(to_text(file, out[file]), encoding="utf-8")
            written.append(path)
    return written


if __name__ == "__main__":
    for p in regenerate(sys.argv[1:]):
        print(f"wrote {p.relative_to(EXPECT.parents[1])} ({p.stat().st_size} bytes)")
