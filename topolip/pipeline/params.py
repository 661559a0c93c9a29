"""Run parameters as a run reads them: profiles (``data/profiles/*.yml``), command-line
overrides, and the ``parameters`` cell each notebook declares.

:func:`load_params` reads a profile, applies overrides and validates them against the schema
(:mod:`topolip.pipeline.param_schema`), remembering where each value came from for the one-line
error message; :func:`notebook_parameters` reads a notebook's declared values and checks them
against the same schema, so a notebook run alone refuses what ``topolip run`` refuses.
"""

from __future__ import annotations

import ast
import copy
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from topolip.pipeline.param_schema import SCHEMA, ParameterError, suggest_name, validate_params

__all__ = [
    "EXECUTION_PARAMETERS", "LOCATION_PARAMETERS", "apply_overrides", "declared_parameters",
    "load_params", "load_profile", "notebook_parameters", "parse_override",
]


def _read_profile(profile: str | Path, *, root: str | Path = ".") -> tuple[dict[str, Any], Path]:
    path = Path(profile)
    if path.suffix not in (".yml", ".yaml"):
        path = Path(root) / "data" / "profiles" / f"{profile}.yml"
    if not path.exists():
        known = sorted(p.stem for p in (Path(root) / "data" / "profiles").glob("*.yml"))
        raise ParameterError(f"no profile {str(profile)!r} ({path}); known profiles: {known}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[:exc.start].count(b"\n") + 1
        raise ParameterError(f"profile {path} is not valid UTF-8 text (byte "
                             f"0x{exc.object[exc.start]:02x} on line {line}); save it as "
                             f"UTF-8") from None
    except OSError as exc:
        raise ParameterError(f"cannot read profile {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParameterError(f"profile {path} is not valid YAML{at}: {problem}") from None
    if not isinstance(data, dict):
        raise ParameterError(f"profile {path} must be a YAML mapping of parameter: value")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise ParameterError(f"profile {path}: parameter names must be text, got {bad[0]!r}")
    return data, path


def load_profile(profile: str | Path, *, root: str | Path = ".") -> dict[str, Any]:
    """Read a profile: a name (``quick`` → ``{root}/data/profiles/quick.yml``) or a YAML path.

    The values are returned as written; :func:`load_params` also validates them against
    :data:`SCHEMA`.

    Raises
    ------
    ParameterError
        One line: the file does not exist (the known profiles are listed), is not UTF-8, is not
        valid YAML (line and column given) or is not a YAML mapping.
    """
    return _read_profile(profile, root=root)[0]


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
    topolip.pipeline.param_schema.ParameterError: unknown parameter 'epoch'; did you mean 'epochs'?
    """
    out = copy.deepcopy(dict(params))
    known = set(out) if known is None else set(known)
    for text in overrides:
        path, value = parse_override(text)
        if path[0] not in known:
            raise ParameterError(f"unknown parameter {path[0]!r}{suggest_name(path[0], known)}")
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


#: Parameters that say where the work runs (:mod:`topolip.tasks`), not what it computes: the
#: same tables come out on any scheduler at the same torch thread count (a local cluster's
#: workers train at one thread, as ``scheduler=serial threads=1`` does; two threads give
#: weights that differ at float32 rounding), so they are left out of what a table records and
#: of a notebook's cache key (changing them re-executes nothing).
EXECUTION_PARAMETERS = ("scheduler", "n_workers")

#: Parameters that say where things are, not what was computed: left out of the parameters a
#: table or figure records (:func:`notebook_parameters`).
LOCATION_PARAMETERS = ("results_dir", "data_root", *EXECUTION_PARAMETERS)


def notebook_parameters(namespace: Mapping[str, Any], notebook: str, *,
                        root: str | Path = ".",
                        exclude: Iterable[str] = LOCATION_PARAMETERS) -> dict[str, Any]:
    """The values of a notebook's declared parameters, read from its namespace.

    A notebook records the parameters its tables and figures were made with by calling
    ``params = notebook_parameters(globals(), "02_topolip")`` after its parameters cell: the
    names come from the cell tagged ``parameters`` in ``{root}/notebooks/{notebook}.py``
    (:func:`declared_parameters`), the values from the namespace (papermill's injected values
    included), so the record cannot drift from the cell. The values are checked against the
    schema and its cross-field rules (:func:`validate_params`, names it does not know left
    alone), so a notebook run alone refuses what ``topolip run`` refuses, in the same words.

    Parameters
    ----------
    namespace : mapping
        The notebook's globals.
    notebook : str
        The notebook's name without extension, e.g. ``"02_topolip"``.
    root : str or Path
        Repository root (the runner executes notebooks with it as working directory).
    exclude : iterable of str
        Declared names left out (default: the locations ``results_dir`` and ``data_root`` and
        where the work runs, ``scheduler`` and ``n_workers``).

    Returns
    -------
    dict
        Declared name → value, in the cell's order.

    Raises
    ------
    ParameterError
        If the notebook source is missing, its parameters cell is missing or ambiguous, a
        declared name is not defined in ``namespace``, or a value breaks the schema.

    Examples
    --------
    >>> notebook_parameters({"results_dir": "r", "n_boot": 200, "alpha": 0.05,
    ...                      "min_accuracy": 0.5}, "09_measures")
    {'n_boot': 200, 'alpha': 0.05, 'min_accuracy': 0.5}
    """
    import jupytext

    path = Path(root) / "notebooks" / f"{notebook}.py"
    if not path.is_file():
        raise ParameterError(f"notebook_parameters: no notebook source {path} (is the working "
                             "directory the repository root?)")
    declared = declared_parameters(jupytext.read(path), name=str(path))
    skip = set(exclude)
    missing = [n for n in declared if n not in skip and n not in namespace]
    if missing:
        raise ParameterError(f"{notebook}: parameters {missing} are declared in its parameters "
                             "cell but not defined")
    values = {n: namespace[n] for n in declared if n not in skip}
    where = f"notebook {notebook}'s parameters (its cell or papermill's values)"
    validate_params(values, dict.fromkeys(values, where), strict=False)
    return values  # as given: the record of the run keeps the values it ran with


def load_params(profile: str | Path, overrides: Iterable[str] = (), *,
                root: str | Path = ".") -> tuple[dict[str, Any], dict[str, str]]:
    """Profile plus overrides, validated: ``(params, sources)``.

    ``sources[name]`` says where the value came from (the profile file or the override's
    text). Every profile key and override name must be in
    :data:`~topolip.pipeline.param_schema.SCHEMA`.

    Raises
    ------
    ParameterError
        One line, for an unreadable profile (missing, invalid UTF-8, invalid YAML, not a
        mapping), an unknown name, or a value the schema or a cross-field rule refuses.
    """
    data, path = _read_profile(profile, root=root)
    where = f"profile {path}"
    sources = {k: where for k in data}
    overrides = list(overrides)
    params = apply_overrides(data, overrides, known=set(SCHEMA) | set(data))
    for text in overrides:
        sources[text.partition("=")[0].strip().split(".")[0]] = f"override {text!r}"
    return validate_params(params, sources), sources
