"""The one-way dependencies of the package's layers, enforced as package rules.

Bottom to top (README, "Layout"):

- base modules: ``io``, ``roster``, ``schema``, ``tasks`` (the Dask task runner), all
  torch-free, and ``tensors`` (torch helpers);
- ``topology`` (numpy only: diagrams, distances, the metric and its spec);
- ``bounds`` (torch: closed-form and estimated Lipschitz constants; knows no model);
- ``nets`` (torch: data, models, training) → ``perturbations`` (attacks, corruptions, OOD sets) →
  ``experiments`` (one trained model in, tidy rows out; the per-model tasks);
- ``evidence`` (torch-free: statistics, claims, the measure study) → ``report``
  (torch-free: formatting, figures, findings);
- ``pipeline`` (the chain, the book) → ``cli``.

A module's rule is its layer's: a new file in ``topolip/evidence/`` inherits evidence's
allowed imports and its torch-free check, with no list to update. A new top-level module or
package fails :func:`test_every_module_has_a_layer` until it is given a layer here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "topolip"

BASE = {"topolip.io", "topolip.roster", "topolip.schema", "topolip.tasks"}
#: layer -> the layers it may import (besides itself). Imports inside functions count too.
ALLOWED: dict[str, set[str]] = {
    "topolip.io": set(),
    "topolip.roster": set(),
    "topolip.schema": {"topolip.io", "topolip.roster"},
    "topolip.tensors": set(),
    "topolip.tasks": set(),  # torch-free and knows nothing of what a task computes
    "topolip.topology": BASE,
    "topolip.bounds": BASE | {"topolip.tensors"},
    "topolip.nets": BASE | {"topolip.tensors"},
    "topolip.perturbations": BASE | {"topolip.tensors", "topolip.nets"},
    "topolip.experiments": BASE | {"topolip.tensors", "topolip.topology", "topolip.bounds",
                                   "topolip.nets", "topolip.perturbations"},
    "topolip.evidence": BASE,
    "topolip.report": BASE | {"topolip.evidence"},
    "topolip.pipeline": {"*"},
    "topolip.cli": {"*"},
    "topolip": {"*"},  # the curated API, loaded lazily
}
#: layers whose every module imports no torch (checked in a fresh interpreter)
TORCH_FREE = ["topolip.io", "topolip.roster", "topolip.schema", "topolip.tasks", "topolip.topology",
              "topolip.evidence", "topolip.report"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> str | None:
    """The layer a module belongs to: its first two name parts (``topolip.evidence.stats`` →
    ``topolip.evidence``), or None for a name no layer claims."""
    parts = module.split(".")
    name = ".".join(parts[:2])
    return name if name in ALLOWED else None


def imported_modules(source: str, module: str, *, is_package: bool = False) -> set[str]:
    """Absolute names of the modules an import statement of ``source`` may load.

    ``from X import y`` yields ``X`` and ``X.y`` (``y`` may be a submodule); relative imports are
    resolved against ``module`` (a package's ``__init__`` resolves against itself). Imports
    inside functions count too: a lazy import is still a dependency.
    """
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = import_from_module(node, package)
            names.add(prefix)
            names.update(f"{prefix}.{alias.name}" for alias in node.names)
    return names


def import_from_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module ``from X import ...`` reads, a relative ``X`` resolved
    against ``package`` (the importing module's package)."""
    if not node.level:
        return node.module or ""
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def violations(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """The imports of ``source`` (the text of ``module``) its layer does not allow."""
    own = layer_of(module)
    allowed = ALLOWED[own]
    if "*" in allowed:
        return []
    out = set()
    for name in imported_modules(source, module, is_package=is_package):
        if name != "topolip" and not name.startswith("topolip."):
            continue
        target = layer_of(name)
        if name == "topolip" or target is None:
            # `from topolip import x`: x is a layer or a curated name; both reach upward
            if name == "topolip":
                continue
            out.add(name)
        elif target != own and target not in allowed:
            out.add(name)
    return sorted(out)


def _files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer():
    orphans = [module_name(p) for p in _files() if layer_of(module_name(p)) is None
               and module_name(p) != "topolip"]
    assert orphans == [], f"give these a layer in tests/test_layering.py: {orphans}"
    assert {layer_of(module_name(p)) for p in _files()} >= set(TORCH_FREE)


@pytest.mark.parametrize("path", _files(), ids=module_name)
def test_imports_follow_the_layers(path):
    module = module_name(path)
    assert violations(path.read_text(), module, is_package=path.name == "__init__.py") == []


def test_the_rule_catches_every_import_form():
    src = ("import topolip.pipeline\n"
           "from ..pipeline import run_chain\n"
           "from .. import report\n"
           "from topolip.evidence import stats\n"
           "def f():\n    from topolip.nets.models import build_model\n")
    assert violations(src, "topolip.topology.metric") == [
        "topolip.evidence", "topolip.evidence.stats", "topolip.nets.models",
        "topolip.nets.models.build_model", "topolip.pipeline", "topolip.pipeline.run_chain",
        "topolip.report",
    ]
    # a new file inherits its layer's rule; the same import is allowed one layer up
    assert violations("from topolip.evidence import stats\n", "topolip.report.new") == []
    assert violations("from topolip.report import figures\n", "topolip.evidence.new") == [
        "topolip.report", "topolip.report.figures"]
    # a package's __init__ resolves ``.`` against itself
    assert imported_modules("from .plain import PlainStack", "topolip.nets.models",
                            is_package=True) == {"topolip.nets.models.plain",
                                                 "topolip.nets.models.plain.PlainStack"}
    assert layer_of("topolip.newthing") is None


def _loaded_after_import(modules: list[str]) -> list[str]:
    """Names in ``sys.modules`` after importing ``modules`` in a fresh interpreter."""
    code = (f"import importlib, json, sys\nfor m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("layer", TORCH_FREE)
def test_torch_free_layers_import_no_torch(layer):
    modules = [module_name(p) for p in _files() if layer_of(module_name(p)) == layer]
    loaded = _loaded_after_import(modules)
    heavy = sorted(m for m in loaded if m.split(".")[0] in {"torch", "torchvision",
                                                             "torchattacks"})
    assert heavy == [], f"{layer} pulls in {heavy[:5]}"
    if layer == "topolip.topology":
        nets = [m for m in loaded if m.startswith("topolip.nets")]
        assert nets == [], f"{layer} pulls in {nets}"


#: the modules that draw: the only torch-free modules allowed to load matplotlib
DRAWS = {"topolip.report.figures"}


@pytest.mark.parametrize("layer", TORCH_FREE)
def test_torch_free_modules_load_no_matplotlib_unless_they_draw(layer):
    """Issue 29: ``import topolip.report.format`` loaded matplotlib (3.3 s) through its package's
    re-exports; each module that does not draw now loads neither torch nor matplotlib."""
    modules = [module_name(p) for p in _files()
               if layer_of(module_name(p)) == layer and module_name(p) not in DRAWS]
    loaded = _loaded_after_import(modules)
    drawing = sorted(m for m in loaded if m.split(".")[0] in {"matplotlib", "seaborn"})
    assert drawing == [], f"{layer} pulls in {drawing[:5]}"


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (module -> the modules it imports): its strongly connected
    components of more than one module (Tarjan), each sorted.

    >>> import_cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()})
    [['a', 'b']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(cycles)


def test_no_module_imports_itself_through_a_cycle():
    """Issue 29: ``pipeline/book.py`` and ``pipeline/pdf.py`` imported each other (a lazy import
    hid it). Imports inside functions count, as for the layers."""
    files = {module_name(p): p for p in _files()}
    graph = {m: {n for n in imported_modules(p.read_text(), m, is_package=p.name == "__init__.py")
                 if n in files and n != m} for m, p in files.items()}
    assert import_cycles(graph) == []


def test_bounds_know_no_model():
    for path in (PACKAGE / "bounds").glob("*.py"):
        names = imported_modules(path.read_text(), module_name(path),
                                 is_package=path.name == "__init__.py")
        assert not [n for n in names if n.startswith("topolip.nets")], path.name


def sentence_builders(source: str) -> list[str]:
    """The functions of ``source`` that write the book's prose: named ``*_findings`` or
    ``*sentence*`` (issue 29: numbers in ``evidence/``, words in ``report/``).

    >>> sentence_builders("def claim_findings(v): ...\\ndef _sentence(r): ...\\ndef holm(p): ...")
    ['claim_findings', '_sentence']
    """
    return [n.name for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.FunctionDef)
            and (n.name.endswith("_findings") or "sentence" in n.name)]


def test_sentences_are_written_in_report_only():
    """The layers below ``report`` compute numbers; every sentence builder lives in
    ``topolip.report`` (``verdict_sentences``, ``measure_sentences``, ``findings``,
    ``literature``)."""
    words = {module_name(p): sentence_builders(p.read_text()) for p in _files()
             if not module_name(p).startswith("topolip.report")}
    assert {m: f for m, f in words.items() if f} == {}
