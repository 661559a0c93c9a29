"""No private API across a boundary (issue 12), checked statically on every module of topolip
and every script of ``benchmarks/`` (issue 20: a benchmark times and checks the public path).

A name that starts with one underscore (not a dunder) is private to the module that defines it:

- no ``from X import _name`` and no ``X._name`` on an imported name ``X``, whatever ``X`` is
  (another module of ours, or another package such as torchvision or matplotlib);
- a private module (``topolip.topology.distances._h0``, ``topolip.bounds._checks``) is imported only
  from inside the package that holds it; a private module of another package
  (``scipy.spatial._distance_pybind``) never.

Imports inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from test_layering import import_from_module, module_name

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "topolip"
BENCHMARKS = ROOT / "benchmarks"
FILES = sorted(PACKAGE.rglob("*.py")) + sorted(BENCHMARKS.glob("*.py"))


def _root_name(node: ast.expr) -> str | None:
    """``a`` for ``a.b.c``; None when the chain does not start at a plain name."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _module_problem(target: str, module: str) -> str | None:
    """Why importing the module ``target`` from ``module`` breaks the rule; None if it does not."""
    parts = target.split(".")
    for k, part in enumerate(parts):
        if not _private(part):
            continue
        holder = ".".join(parts[:k])
        if parts[0] == "topolip" and holder and (module == holder
                                                 or module.startswith(holder + ".")):
            continue  # a private module of ours, imported from inside its package
        return f"{module} imports the private module {target}"
    return None


def private_api_uses(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """Every use of a private name or module across a boundary in ``source`` (module
    ``module``), as readable lines; empty when the rule holds."""
    package = module if is_package else module.rpartition(".")[0]
    problems: list[str] = []
    imported: set[str] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                imported.add(alias.asname or alias.name.split(".")[0])
                problems.append(_module_problem(alias.name, module))
        elif isinstance(node, ast.ImportFrom):
            prefix = import_from_module(node, package)
            problems.append(_module_problem(prefix, module))
            for alias in node.names:
                imported.add(alias.asname or alias.name)
                if not _private(alias.name):
                    continue
                # ``from . import _h0`` is a private module of ours: allowed inside its package
                why = _module_problem(f"{prefix}.{alias.name}", module)
                is_own_module = prefix.split(".")[0] == "topolip" and (
                    PACKAGE.parent / Path(*prefix.split("."), alias.name)).with_suffix(
                    ".py").exists()
                if not is_own_module:
                    why = f"{module} imports the private name {alias.name} from {prefix}"
                problems.append(why)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr)
                and _root_name(node.value) in imported):
            problems.append(f"{module} uses {ast.unparse(node)} (line {node.lineno})")
    return sorted(p for p in problems if p)


@pytest.mark.parametrize("path", FILES, ids=module_name)
def test_no_private_api_across_a_boundary(path):
    assert private_api_uses(path.read_text(), module_name(path),
                            is_package=path.name == "__init__.py") == []


def test_the_benchmarks_are_scanned():
    names = {module_name(p) for p in FILES}
    assert {"benchmarks.bench_topolip", "benchmarks.bench_distances"} <= names
    # a benchmark is outside every package of ours: none of our private names or modules
    assert private_api_uses("from topolip import diagrams as dg\nx = dg._snap_pairs\n"
                            "from topolip.topology.distances import _h0\n",
                            "benchmarks.bench_x") == [
        "benchmarks.bench_x imports the private module topolip.topology.distances._h0",
        "benchmarks.bench_x uses dg._snap_pairs (line 2)",
    ]


def test_the_check_catches_every_form():
    src = ("from .dispatch import _check_finite_state\n"
           "from scipy.spatial._distance_pybind import pdist_euclidean\n"
           "import matplotlib.ticker as mt\n"
           "from ..nets.train import _plain, spec_for\n"
           "from ..topology.distances import _h0\n"
           "from ._checks import as_batch\n"
           "def f():\n"
           "    return mt.LogFormatter._num_to_string, mt._private\n")
    assert private_api_uses(src, "topolip.bounds.estimate") == [
        "topolip.bounds.estimate imports the private module scipy.spatial._distance_pybind",
        "topolip.bounds.estimate imports the private module topolip.topology.distances._h0",
        "topolip.bounds.estimate imports the private name _check_finite_state from "
        "topolip.bounds.dispatch",
        "topolip.bounds.estimate imports the private name _plain from topolip.nets.train",
        "topolip.bounds.estimate uses mt.LogFormatter._num_to_string (line 8)",
        "topolip.bounds.estimate uses mt._private (line 8)",
    ]
    # inside its package a private module is fine, and so is a package's own private module
    assert private_api_uses("from ._costs import ground\nfrom . import _h0\n",
                            "topolip.topology.distances", is_package=True) == []
    assert private_api_uses("from ._h0 import h0_bottleneck\n",
                            "topolip.topology.distances._bottleneck") == []
