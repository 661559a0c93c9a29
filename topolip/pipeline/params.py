"""Run parameters: profiles (``data/profiles/*.yml``), command-line overrides and the
``parameters`` cell each notebook declares."""

from __future__ import annotations

import ast
import copy
import difflib
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "ParameterError", "apply_overrides", "declared_parameters", "load_profile", "parse_override",
]


class ParameterError(ValueError):
    """A profile, override or notebook that names parameters wrongly."""


def load_profile(profile: str | Path, *, root: str | Path = ".") -> dict[str, Any]:
    """Read a profile: a name (``quick`` → ``{root}/data/profiles/quick.yml``) or a YAML path.

    Raises
    ------
    ParameterError
        If the file does not exist (the known profiles are listed) or is not a YAML mapping.
    """
    path = Path(profile)
    if path.suffix not in (".yml", ".yaml"):
        path = Path(root) / "data" / "profiles" / f"{profile}.yml"
    if not path.exists():
        known = sorted(p.stem for p in (Path(root) / "data" / "profiles").glob("*.yml"))
        raise ParameterError(f"no profile {str(profile)!r} ({path}); known profiles: {known}")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ParameterError(f"profile {path} must be a YAML mapping of parameter: value")
    return data


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"a.b=v"`` → ``(["a", "b"], value)``; the value is parsed as YAML (``inf`` is ``math.inf``).

    Raises
    ------
    ParameterError
        If there is no ``=`` or the name is empty.

    Examples
    --------
    >>> parse_override("epochs=2")
    (['epochs'], 2)
    >>> parse_override("vit.num_layers=3")
    (['vit', 'num_layers'], 3)
    >>> parse_override("q=inf"), parse_override("archs=[vit, resnet]")
    ((['q'], inf), (['archs'], ['vit', 'resnet']))
    """
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name or any(not part for part in name.split(".")):
        raise ParameterError(f"override {text!r} must look like name=value (or group.name=value)")
    raw = raw.strip()
    if raw.lower() in ("inf", "+inf", "infinity"):
        return name.split("."), math.inf
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError as exc:
        raise ParameterError(f"cannot parse the value of override {text!r}: {exc}") from exc
    return name.split("."), value


def _suggest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def apply_overrides(params: Mapping[str, Any], overrides: Iterable[str],
                    known: Iterable[str] | None = None) -> dict[str, Any]:
    """Return a copy of ``params`` with ``name=value`` overrides applied.

    ``group.name=value`` sets one key of a mapping-valued parameter (``vit.num_layers=2``), and
    only a key that the mapping already has.

    Raises
    ------
    ParameterError
        If an override names a parameter that is not in ``known`` (default: the keys of
        ``params``), or a key that a group lacks.

    Examples
    --------
    >>> apply_overrides({"epochs": 5, "vit": {"num_layers": 4}}, ["epochs=1", "vit.num_layers=2"])
    {'epochs': 1, 'vit': {'num_layers': 2}}
    >>> apply_overrides({"epochs": 5}, ["epoch=1"])
    Traceback (most recent call last):
    ...
    topolip.pipeline.params.ParameterError: unknown parameter 'epoch'; did you mean 'epochs'?
    """
    out = copy.deepcopy(dict(params))
    known = set(out) if known is None else set(known)
    for text in overrides:
        path, value = parse_override(text)
        if path[0] not in known:
            raise ParameterError(f"unknown parameter {path[0]!r}{_suggest(path[0], known)}")
        if len(path) == 1:
            out[path[0]] = value
            continue
        node = out.get(path[0])
        for i, key in enumerate(path[1:], start=1):
            if not isinstance(node, dict) or key not in node:
                keys = sorted(node) if isinstance(node, dict) else []
                raise ParameterError(
                    f"parameter {'.'.join(path[:i])!r} has no key {key!r}; its keys: {keys}")
            if i == len(path) - 1:
                node[key] = value
            else:
                node = node[key]
    return out


def declared_parameters(nb, *, name: str = "notebook") -> dict[str, str]:
    """Names assigned in the notebook's cell tagged ``parameters`` → their default's source text.

    Raises
    ------
    ParameterError
        If no cell, or more than one, is tagged ``parameters``, or it cannot be parsed.

    Examples
    --------
    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
    ...     "epochs = 5  # passes\\nq: float = float('inf')", metadata={"tags": ["parameters"]})])
    >>> declared_parameters(nb)
    {'epochs': '5', 'q': "float('inf')"}
    """
    cells = [c for c in nb.cells
             if c.cell_type == "code" and "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ParameterError(
            f"{name} has {len(cells)} cells tagged 'parameters'; it needs exactly one "
            "(in a py:percent source: '# %% tags=[\"parameters\"]')")
    try:
        tree = ast.parse(cells[0].source)
    except SyntaxError as exc:
        raise ParameterError(f"{name}: cannot parse its parameters cell: {exc}") from exc
    declared: dict[str, str] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        for t in targets:
            if isinstance(t, ast.Name):
                declared[t.id] = ast.get_source_segment(cells[0].source, node.value) or ""
    return declared
