"""Every public submodule's ``__all__`` is re-exported by its package, and every ``__all__`` name
exists: one public name, one import path (``from topolip.bounds import ...``)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

#: Every package of topolip below the top level, nested ones included (found, so a new package
#: is checked too).
_ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(".".join(p.parent.relative_to(_ROOT).parts)
                  for p in (_ROOT / "topolip").rglob("*/__init__.py"))


def export_problems(package: ModuleType) -> list[str]:
    """What breaks the rule in ``package``; empty when it holds. Private (``_``) submodules are
    exempt; a public submodule must declare ``__all__``."""
    problems = [f"{package.__name__}.{name} is in __all__ but not defined"
                for name in getattr(package, "__all__", ()) if not hasattr(package, name)]
    if not hasattr(package, "__all__"):
        problems.append(f"{package.__name__} declares no __all__")
    exported = set(getattr(package, "__all__", ()))
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        sub = importlib.import_module(f"{package.__name__}.{info.name}")
        if not hasattr(sub, "__all__"):
            problems.append(f"{sub.__name__} declares no __all__")
            continue
        for name in sub.__all__:
            if not hasattr(sub, name):
                problems.append(f"{sub.__name__}.{name} is in __all__ but not defined")
            elif name not in exported:
                problems.append(f"{sub.__name__}.{name} is not re-exported by {package.__name__}")
            elif getattr(package, name) is not getattr(sub, name):
                problems.append(f"{package.__name__}.{name} is not {sub.__name__}.{name}")
    return problems


def test_every_package_is_checked():
    assert {"topolip.bounds", "topolip.nets.data", "topolip.topology.distances",
            "topolip.nets.models", "topolip.pipeline", "topolip.evidence"} <= set(PACKAGES)


@pytest.mark.parametrize("name", PACKAGES)
def test_package_re_exports_every_submodule_all(name):
    package = importlib.import_module(name)
    assert export_problems(package) == []
    assert len(package.__all__) == len(set(package.__all__)), "duplicates in __all__"


def test_the_check_finds_a_missing_re_export(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg_exports"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n__all__ = ['f', 'ghost']\n")
    (pkg / "a.py").write_text("__all__ = ['f', 'g']\ndef f(): pass\ndef g(): pass\n")
    (pkg / "b.py").write_text("x = 1\n")
    (pkg / "_private.py").write_text("y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        problems = export_problems(importlib.import_module("fakepkg_exports"))
    finally:
        for mod in [m for m in sys.modules if m.startswith("fakepkg_exports")]:
            del sys.modules[mod]
    assert problems == [
        "fakepkg_exports.ghost is in __all__ but not defined",
        "fakepkg_exports.a.g is not re-exported by fakepkg_exports",
        "fakepkg_exports.b declares no __all__",
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


def test_the_api_is_the_issue_s_list_each_name_once_from_its_package():
    import topolip

    wanted = {"rips_diagrams", "wasserstein", "bottleneck", "diagram_distance", "topolip_table",
              "summarize", "lipschitz_bound", "lipschitz_estimate", "layer_bounds",
              "build_model", "collect_activations", "perturb", "fit", "measure_model"}
    assert wanted <= set(topolip.API)
    for name, package in topolip.API.items():
        module = importlib.import_module(package)
        assert name in module.__all__, f"{package} does not export {name}"
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
