"""One import path per name (issue 29): each public name is imported from the module that defines
it. The layer packages re-export nothing (a package may define names of its own, like
``topolip.nets.models.build_model``, or gather its private modules into one concept, like
``topolip.topology.distances``), no submodule is shadowed by a function, every ``__all__`` lists
only names its module defines, and every ``from topolip... import name`` in the package, the
tests, the notebooks and the benchmarks reads the defining module. The curated top level
(``topolip.API``) names the defining module of each name it offers."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

_ROOT = Path(__file__).resolve().parents[1]
#: Every package of topolip, nested ones included (found, so a new package is checked too).
PACKAGES = sorted(".".join(p.parent.relative_to(_ROOT).parts)
                  for p in (_ROOT / "topolip").rglob("*/__init__.py"))
#: Every module of topolip (packages included), by dotted name.
MODULES = {".".join(p.relative_to(_ROOT).with_suffix("").parts).removesuffix(".__init__"): p
           for p in (_ROOT / "topolip").rglob("*.py")}
#: Where import sites are checked.
SITES = sorted(p for d in ("topolip", "tests", "notebooks", "benchmarks")
               for p in (_ROOT / d).rglob("*.py"))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_names(source: str) -> set[str]:
    r"""Top-level names ``source`` binds itself (``def``, ``class``, assignment, also inside
    top-level ``if``/``try``), not the names it imports.

    >>> sorted(defined_names("import os\nfrom a import b\nx = 1\ndef f(): y = 2\n"))
    ['f', 'x']
    """
    out: set[str] = set()

    def walk(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, ast.Assign):
                out.update(n.id for t in node.targets for n in ast.walk(t)
                           if isinstance(n, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                out.add(node.target.id)
            elif isinstance(node, (ast.If, ast.Try)):
                walk(node.body)
                walk(node.orelse)
                for handler in getattr(node, "handlers", ()):
                    walk(handler.body)
                walk(getattr(node, "finalbody", ()))

    walk(ast.parse(source).body)
    return out


def gathered_names(source: str, package: str) -> set[str]:
    """The names a package's ``__init__`` (text ``source``) imports from its own private
    submodules: the one path of a concept package's names (``topolip.topology.distances``).

    >>> sorted(gathered_names("from ._a import f\\nfrom p._b import g\\nfrom .c import h\\n", "p"))
    ['f', 'g']
    """
    out: set[str] = set()
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ImportFrom):
            continue
        module = (node.module or "") if node.level else (node.module or "").removeprefix(
            package + ".")
        if (node.level or (node.module or "").startswith(package + ".")) and _private(
                module.split(".")[0]):
            out.update(alias.asname or alias.name for alias in node.names)
    return out


def _is_module(package: str, name: str, modules) -> bool:
    return f"{package}.{name}" in modules


def export_problems(package: ModuleType) -> list[str]:
    """What breaks the one-path rule in ``package``; empty when it holds.

    The package re-exports no name of a public submodule (names from its private ``_``
    submodules may be gathered), no attribute named like a submodule is anything but that
    submodule, and every public submodule declares an ``__all__`` of names it defines itself.
    """
    name = package.__name__
    root = Path(package.__file__).parent
    problems = []
    tree = ast.parse(Path(package.__file__).read_text())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.level or
                                                 (node.module or "").startswith(name + ".")):
            source = node.module or ""
            last = source.rpartition(".")[2] if not node.level else source.split(".")[0]
            if _private(last):
                continue  # a concept package gathers its private modules
            for alias in node.names:
                if not (root / alias.name).is_dir() and not (root / f"{alias.name}.py").exists():
                    problems.append(f"{name} re-exports {alias.name} (import it from "
                                    f"{source or name})")
    for n in getattr(package, "__all__", ()):
        if not hasattr(package, n):
            problems.append(f"{name}.{n} is in __all__ but not defined")
    for info in pkgutil.iter_modules(package.__path__):
        sub = importlib.import_module(f"{name}.{info.name}")
        if getattr(package, info.name) is not sub:
            problems.append(f"{name}.{info.name} is not the submodule {sub.__name__}")
        if info.name.startswith("_") or info.ispkg:
            continue
        if not hasattr(sub, "__all__"):
            problems.append(f"{sub.__name__} declares no __all__")
            continue
        sub_own = defined_names(Path(sub.__file__).read_text())
        for n in sub.__all__:
            if n not in sub_own:
                problems.append(f"{sub.__name__}.{n} is in __all__ but not defined there")
    return problems


def import_site_problems(source: str, where: str, modules=None) -> list[str]:
    """Every ``from topolip.X import n`` of ``source`` whose ``n`` is neither a submodule of
    ``X`` nor defined by ``X`` (``X`` a concept package may offer its ``__all__``): the name was
    read through a second path. ``from topolip import n`` must name a submodule (the curated
    top level is for users, not for the package's own code)."""
    modules = MODULES if modules is None else modules
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        mod = node.module
        if mod not in modules:
            continue
        text = modules[mod].read_text()
        own = defined_names(text)
        offered = gathered_names(text, mod) if modules[mod].name == "__init__.py" else set()
        for alias in node.names:
            if _is_module(mod, alias.name, modules) or alias.name in own and mod != "topolip":
                continue
            if alias.name in offered:
                continue  # a concept package's gathered names
            problems.append(f"{where}:{node.lineno}: {alias.name} imported from {mod}, "
                            "which does not define it")
    return problems


def test_every_package_is_checked():
    assert {"topolip.bounds", "topolip.nets.data", "topolip.topology.distances",
            "topolip.nets.models", "topolip.pipeline", "topolip.evidence"} <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_no_package_re_exports_and_no_module_is_shadowed(name):
    assert export_problems(importlib.import_module(name)) == []


def _doctest_imports(text: str) -> str:
    """The one-line ``>>> from topolip... import ...`` statements of the docstrings in ``text``,
    as source (one per line, so their line numbers are not the file's)."""
    return "\n".join(m.group(1) for m in re.finditer(r"^\s*>>> (from topolip\S* import [^(\n]+)$",
                                                     text, flags=re.M))


def test_every_import_site_reads_the_defining_module():
    problems = [p for path in SITES
                for p in import_site_problems(path.read_text(), str(path.relative_to(_ROOT)))]
    problems += [p for path in SITES
                 for p in import_site_problems(_doctest_imports(path.read_text()),
                                               f"{path.relative_to(_ROOT)} (doctest)")]
    assert problems == []


def test_the_checks_find_a_re_export_a_shadow_and_a_second_path(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg_exports"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\nfrom ._p import z\nfrom .b import b\n"
                                     "__all__ = ['f', 'ghost']\n")
    (pkg / "a.py").write_text("from os import sep\n__all__ = ['f', 'sep']\ndef f(): pass\n")
    (pkg / "b.py").write_text("def b(): pass\n")
    (pkg / "_p.py").write_text("z = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        problems = export_problems(importlib.import_module("fakepkg_exports"))
    finally:
        for mod in [m for m in sys.modules if m.startswith("fakepkg_exports")]:
            del sys.modules[mod]
    assert problems == [
        "fakepkg_exports re-exports f (import it from a)",
        "fakepkg_exports.ghost is in __all__ but not defined",
        "fakepkg_exports.a.sep is in __all__ but not defined there",
        "fakepkg_exports.b is not the submodule fakepkg_exports.b",
        "fakepkg_exports.b declares no __all__",
    ]
    modules = {"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py"}
    src = "from pkg import f, a\nfrom pkg.a import f, sep\ndef g():\n    from pkg.b import b\n"
    assert import_site_problems(src, "x.py", modules) == [
        "x.py:1: f imported from pkg, which does not define it",
        "x.py:2: sep imported from pkg.a, which does not define it",
    ]


# --- the top level: the curated API and the layers, read from the folder -------------------------

def _on_disk() -> list[str]:
    """The public submodules of ``topolip`` as files: modules and packages not named ``_*``."""
    root = Path(__file__).resolve().parents[1] / "topolip"
    names = [p.stem for p in root.glob("*.py")]
    names += [p.parent.name for p in root.glob("*/__init__.py")]
    return sorted(n for n in names if not n.startswith("_"))


def test_the_top_level_lists_the_api_and_every_submodule_on_disk():
    import topolip

    assert topolip.__all__ == ["__version__", *topolip.API, *_on_disk()]
    assert set(_on_disk()) | set(topolip.API) <= set(dir(topolip))
    assert {"topology", "evidence", "tasks", "pipeline", "roster"} <= set(topolip.__all__)
    assert len(topolip.__all__) == len(set(topolip.__all__)), "an API name shadows a module"


@pytest.mark.parametrize("name", _on_disk())
def test_every_submodule_is_reachable_lazily(name):
    import topolip

    assert getattr(topolip, name) is importlib.import_module(f"topolip.{name}")


def test_the_api_names_each_name_s_defining_module():
    import topolip

    wanted = {"rips_diagrams", "wasserstein", "bottleneck", "diagram_distance", "topolip_table",
              "summarize", "lipschitz_bound", "lipschitz_estimate", "layer_bounds",
              "build_model", "collect_activations", "perturb", "fit", "measure_model"}
    assert wanted <= set(topolip.API)
    for name, where in topolip.API.items():
        module = importlib.import_module(where)
        assert name in module.__all__, f"{where} does not export {name}"
        assert name in defined_names(MODULES[where].read_text()) or (
            MODULES[where].name == "__init__.py"), f"{where} does not define {name}"
        assert getattr(topolip, name) is getattr(module, name), name


def test_the_api_loads_only_the_layer_it_needs():
    import json
    import subprocess

    code = ("import json, sys, topolip; topolip.rips_diagrams; topolip.wasserstein; "
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not [m for m in loaded if m.split(".")[0] in {"torch", "torchvision"}]
    assert not [m for m in loaded if m.startswith(("topolip.nets", "topolip.evidence"))]


def test_an_unknown_top_level_name_is_an_attribute_error():
    import topolip

    with pytest.raises(AttributeError, match="has no attribute 'nonexistent'"):
        topolip.nonexistent  # noqa: B018
    with pytest.raises(AttributeError):
        topolip._SUBMODULE_THAT_IS_NOT  # noqa: B018


def test_importing_topolip_loads_no_submodule_and_no_torch():
    import json
    import subprocess

    code = ("import json, sys, topolip; topolip.__all__; dir(topolip); "
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert [m for m in loaded if m.startswith("topolip.")] == []
    heavy = [m for m in loaded if m.split(".")[0] in {"torch", "torchvision", "numpy", "pandas"}]
    assert heavy == [], f"import topolip pulls in {heavy[:5]}"
