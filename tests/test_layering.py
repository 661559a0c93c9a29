"""The one-way dependencies of DESIGN.md section 4, enforced.

data → models → activations → diagrams → distances → metric → tables → figures → book:

- the diagram and distance code, the table statistics (``stats``, ``measure_study``, ``claims``,
  ``bound_tables``), the report helpers and the figures import no torch (checked at run time,
  in a fresh interpreter, on ``sys.modules``); the diagram and distance code imports no model
  either;
- the science modules (everything in ``topolip`` but ``topolip.pipeline`` and ``topolip.cli``)
  never import the pipeline or the CLI (checked statically on every import statement);
- ``topolip.bounds`` does not know how the models are built: it imports no ``topolip.models``
  (each model declares its own segments).
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

TORCH_FREE = [
    "topolip.diagrams",
    "topolip.distances",
    "topolip.spec",
    "topolip.stats",
    "topolip.measure_study",
    "topolip.masking",
    "topolip.calibration",
    "topolip.claims",
    "topolip.bound_tables",
    "topolip.report",
    "topolip.findings",
    "topolip.figures",
    "topolip.roster",
    "topolip.schema",
]
MODEL_FREE = ["topolip.diagrams", "topolip.distances", "topolip.spec"]
FORBIDDEN_IN_SCIENCE = ("topolip.pipeline", "topolip.cli")


def _loaded_after_import(module: str) -> list[str]:
    """Names in ``sys.modules`` after importing ``module`` in a fresh interpreter."""
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", TORCH_FREE)
def test_module_imports_no_torch(module):
    loaded = _loaded_after_import(module)
    assert module in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in {"torch", "torchvision",
                                                             "torchattacks"})
    assert heavy == [], f"{module} pulls in {heavy[:5]}"
    if module in MODEL_FREE:
        models = [m for m in loaded if m.startswith("topolip.models")]
        assert models == [], f"{module} pulls in {models}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


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


def _depends_on(names: set[str], targets: tuple[str, ...]) -> list[str]:
    return sorted(n for n in names if any(n == t or n.startswith(t + ".") for t in targets))


def _science_files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    return [p for p in files
            if not _module_name(p).startswith(FORBIDDEN_IN_SCIENCE)]


def test_the_science_modules_are_found():
    names = {_module_name(p) for p in _science_files()}
    assert {"topolip.metric", "topolip.bounds.dispatch", "topolip.models.resnet",
            "topolip.data.cifar", "topolip.figures"} <= names
    assert not any(n.startswith(FORBIDDEN_IN_SCIENCE) for n in names)


@pytest.mark.parametrize("path", _science_files(), ids=_module_name)
def test_science_modules_never_import_the_pipeline_or_cli(path):
    names = imported_modules(path.read_text(), _module_name(path),
                             is_package=path.name == "__init__.py")
    assert _depends_on(names, FORBIDDEN_IN_SCIENCE) == []


@pytest.mark.parametrize("path", sorted((PACKAGE / "bounds").glob("*.py")), ids=_module_name)
def test_bounds_import_no_model(path):
    names = imported_modules(path.read_text(), _module_name(path),
                             is_package=path.name == "__init__.py")
    assert _depends_on(names, ("topolip.models",)) == []


def test_the_static_check_catches_every_import_form():
    src = ("import topolip.cli\n"
           "from ..pipeline import run_chain\n"
           "from .. import pipeline\n"
           "def f():\n    from topolip.pipeline.params import load_profile\n")
    names = imported_modules(src, "topolip.bounds.dispatch")
    assert _depends_on(names, FORBIDDEN_IN_SCIENCE) == [
        "topolip.cli", "topolip.pipeline", "topolip.pipeline.params",
        "topolip.pipeline.params.load_profile", "topolip.pipeline.run_chain",
    ]
    # a package's __init__ resolves ``.`` against itself
    assert imported_modules("from .plain import PlainStack", "topolip.models",
                            is_package=True) == {"topolip.models.plain",
                                                 "topolip.models.plain.PlainStack"}
    assert _depends_on(imported_modules("from .models import build_model", "topolip.metric"),
                       ("topolip.models",)) == ["topolip.models", "topolip.models.build_model"]
