"""The parameter schema: every parameter of the chain with its type, range or allowed values,
default and meaning (:data:`SCHEMA`), the cross-field rules that join them (``n_points <=
n_test``, TopoLip strengths on the robustness grids, patch sizes that tile the images, ...), and
:func:`validate_params`, which checks a parameter set against both.

Where a value is the library's to judge, the schema asks the library: TopoLip's degrees, orders
and backend through :meth:`topolip.topology.spec.TopoLipSpec.from_params`, the kinds through the
roster's registries. Reading profiles, overrides and a notebook's ``parameters`` cell is
:mod:`topolip.pipeline.params`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from topolip import roster

__all__ = ["SCHEMA", "Param", "ParameterError", "describe_schema", "schema_defaults",
           "suggest_name", "validate_params"]


class ParameterError(ValueError):
    """A profile, override or notebook that names parameters wrongly."""


def suggest_name(name: str, known: Iterable[str]) -> str:
    """The hint an error about an unknown name ends with: ``"; did you mean 'x'?"`` for the
    closest of ``known`` (:func:`difflib.get_close_matches`), ``""`` when none is close.

    Examples
    --------
    >>> suggest_name("epoch", ["epochs", "lr"])
    "; did you mean 'epochs'?"
    >>> suggest_name("zzz", ["epochs"])
    ''
    """
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# =========================================================================== the schema
#
# ONE place for every parameter of the chain: its type, range or allowed values, default and
# meaning. Adding a parameter is one line in SCHEMA below (plus its cross-field rule, if any,
# in _RULES). Profiles (data/profiles/*.yml) and overrides are validated against it before
# anything runs (validate_params); `topolip params --schema` prints it.

_NO_DEFAULT = object()


class _Invalid(Exception):
    """Raised by a checker: the value is not allowed (an optional detail is attached).

    ``library=True``: the detail is the message of the library function that holds the rule,
    and it replaces the schema's own words (one message per rule).
    """

    def __init__(self, detail: str = "", *, library: bool = False):
        super().__init__(detail)
        self.library = library


def _is_int(v) -> bool:
    return (not isinstance(v, bool)) and (
        isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer()))


class _Int:
    def __init__(self, lo: int | None = None, hi: int | None = None):
        self.lo, self.hi = lo, hi
        parts = [f">= {lo}" if lo is not None else "", f"<= {hi}" if hi is not None else ""]
        self.allowed = "an integer " + " and ".join(p for p in parts if p) if any(parts) \
            else "an integer"

    def __call__(self, v):
        if not _is_int(v):
            raise _Invalid
        v = int(v)
        if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
            raise _Invalid
        return v


class _Float:
    def __init__(self, lo=None, hi=None, *, lo_open=False, hi_open=False, inf=False):
        self.lo, self.hi, self.lo_open, self.hi_open, self.inf = lo, hi, lo_open, hi_open, inf
        if lo is not None and hi is not None:
            rng = f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        elif lo is not None:
            rng = f"{'>' if lo_open else '>='} {lo:g}"
        else:
            rng = ""
        self.allowed = f"a finite number {rng}".rstrip() + (" or inf" if inf else "")

    def __call__(self, v):
        if isinstance(v, str):  # YAML 1.1 reads 1e-3 (no dot) as text
            try:
                v = float(v)
            except ValueError:
                raise _Invalid from None
        if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
            raise _Invalid
        if math.isinf(v):
            if self.inf and v > 0:
                return math.inf
            raise _Invalid
        lo, hi = self.lo, self.hi
        if lo is not None and (v < lo or (self.lo_open and v == lo)):
            raise _Invalid
        if hi is not None and (v > hi or (self.hi_open and v == hi)):
            raise _Invalid
        return v  # an int stays an int (p: 1), as the profiles write it


class _OneOf:
    def __init__(self, *choices, names: Callable[[], tuple] | None = None):
        self._choices, self._names = choices, names

    @property
    def choices(self) -> tuple:
        return tuple(self._names()) if self._names else self._choices

    @property
    def allowed(self) -> str:
        return "one of " + ", ".join(_fmt(c) for c in self.choices)

    def __call__(self, v):
        for c in self.choices:
            if v == c and type(v) is not bool and (not isinstance(c, str) or isinstance(v, str)):
                return c
        raise _Invalid


class _Text:
    allowed = "a non-empty text (a path relative to the repository root)"

    def __call__(self, v):
        if not isinstance(v, str) or not v.strip():
            raise _Invalid
        return v


class _Optional:
    def __init__(self, inner):
        self.inner = inner

    @property
    def allowed(self) -> str:
        return f"null or {self.inner.allowed}"

    def __call__(self, v):
        return None if v is None else self.inner(v)


class _List:
    def __init__(self, item, *, min_len: int = 1, distinct: bool = True,
                 length: int | None = None):
        self.item, self.min_len, self.distinct, self.length = item, min_len, distinct, length

    @property
    def allowed(self) -> str:
        n = f"{self.length}" if self.length else f"at least {self.min_len}"
        return (f"a list of {n}{' distinct' if self.distinct else ''} values, each "
                f"{self.item.allowed}")

    def __call__(self, v):
        if not isinstance(v, list | tuple):
            raise _Invalid
        if len(v) < self.min_len or (self.length is not None and len(v) != self.length):
            raise _Invalid(f"got {len(v)} value(s)")
        out = []
        for i, x in enumerate(v):
            try:
                out.append(self.item(x))
            except _Invalid:
                raise _Invalid(f"item {i} = {_fmt(x)} is not {self.item.allowed}") from None
        if self.distinct and len({repr(x) for x in out}) != len(out):
            raise _Invalid("the values repeat")
        return out


class _Group:
    """A mapping with known keys (model parameters): every key optional, none unknown."""

    def __init__(self, fields: Mapping[str, Any], *, min_len: int = 0):
        self.fields, self.min_len = dict(fields), min_len

    @property
    def allowed(self) -> str:
        return "a mapping with keys among " + ", ".join(
            f"{k} ({c.allowed})" for k, c in self.fields.items())

    def __call__(self, v):
        if not isinstance(v, Mapping) or len(v) < self.min_len:
            raise _Invalid
        out = {}
        for k, x in v.items():
            if k not in self.fields:
                raise _Invalid(f"unknown key {k!r}{suggest_name(str(k), self.fields)}; "
                               f"keys: {sorted(self.fields)}")
            try:
                out[k] = self.fields[k](x)
            except _Invalid as exc:
                detail = f" ({exc})" if str(exc) else ""
                raise _Invalid(f"key {k!r} = {_fmt(x)} is not {self.fields[k].allowed}"
                               f"{detail}") from None
        return out


class _Spec:
    """A parameter of :class:`topolip.topology.spec.TopoLipSpec` (its ``PARAMETERS``): read
    from YAML by ``parse`` (text such as ``"inf"`` to a number), then checked by
    :meth:`~topolip.topology.spec.TopoLipSpec.from_params`, so the rule lives in the library
    and its message is the library's. ``allowed`` describes it for ``topolip params --schema``.
    """

    def __init__(self, name: str, allowed: str, parse: Callable[[Any], Any] | None = None):
        self.name, self.allowed, self.parse = name, allowed, parse

    def __call__(self, v):
        from topolip.topology.spec import TopoLipSpec

        v = v if self.parse is None else self.parse(v)
        try:
            TopoLipSpec.from_params({self.name: v})
        except (ValueError, ImportError) as exc:
            raise _Invalid(str(exc).removeprefix(f"parameter {self.name!r}: "),
                           library=True) from None
        return v


def _number(v):
    """A YAML value as a number when it is numeric text (``"inf"``, ``"1e-3"``); else as is."""
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _integers(v):
    """A YAML list with integral floats (``2.0``) as ints, one integer as a list of it (the
    library takes ``degrees=1``); anything else as is."""
    if _is_int(v):
        return [int(v)]
    if isinstance(v, list | tuple):
        return [int(x) if isinstance(x, float) and _is_int(x) else x for x in v]
    return v


def _integer(v):
    return int(v) if isinstance(v, float) and _is_int(v) else v


class _Scheduler:
    allowed = "local, serial or a scheduler address such as tcp://host:8786"

    def __call__(self, v):
        from topolip.tasks import check_scheduler

        try:
            return check_scheduler(v)
        except ValueError:
            raise _Invalid from None


def _attack_kinds() -> tuple[str, ...]:
    return roster.kind_names("adversarial")


def _corruption_kinds() -> tuple[str, ...]:
    return roster.kind_names("corruption")


def _archs() -> tuple[str, ...]:
    return roster.arch_names()


def _ood_sets() -> tuple[str, ...]:
    return roster.ood_names()


_EPS = _Float(0.0, 1.0)            # L-inf budget in pixels of [0, 1]
# corruption severity (topolip.perturbations.corruptions.MAX_SEVERITY)
_SEVERITY = _Int(0, 5)


class _Strengths:
    """``{kind: strength}``: attacks an eps in [0, 1], corruptions a severity 0..5."""

    def __init__(self, *, min_len: int = 1, max_len: int | None = None):
        self.min_len, self.max_len = min_len, max_len
        n = (f"exactly {min_len}" if max_len == min_len else f"at least {min_len}")
        self.allowed = (f"a mapping of {n} kind: strength, an attack "
                        f"({', '.join(_attack_kinds())}) with an eps "
                        f"{_EPS.allowed}, or a corruption "
                        f"(topolip.perturbations.corruptions.CORRUPTIONS) "
                        f"with a severity {_SEVERITY.allowed}")

    def __call__(self, v):
        if not isinstance(v, Mapping):
            raise _Invalid
        if len(v) < self.min_len or (self.max_len is not None and len(v) > self.max_len):
            raise _Invalid(f"got {len(v)} entries")
        attacks, corruptions = _attack_kinds(), _corruption_kinds()
        out = {}
        for k, x in v.items():
            check = _EPS if k in attacks else _SEVERITY if k in corruptions else None
            if check is None:
                known = [*attacks, *corruptions]
                raise _Invalid(f"unknown kind {k!r}{suggest_name(str(k), known)}; kinds: {known}")
            try:
                out[k] = check(x)
            except _Invalid:
                raise _Invalid(f"{k} = {_fmt(x)} is not {check.allowed}") from None
        return out


_POS = _Int(1)
_VIT = _Group({"patch_size": _POS, "num_layers": _POS, "num_heads": _POS, "hidden_dim": _POS,
               "mlp_dim": _POS})
_RESNET = _Group({"width": _POS, "blocks": _List(_POS, length=4, distinct=False),
                  "stem_kernel": _POS})
_ATT_STACK = _Group({"patch_size": _POS, "num_layers": _POS, "num_heads": _POS,
                     "hidden_dim": _POS})
_CONV_STACK = _Group({"num_layers": _POS, "channels": _POS, "kernel_size": _POS})
_AUGMENT = _Group({"rotate": _Float(0.0, 180.0), "translate": _Float(0.0, 0.5),
                   "scale": _Float(0.0, 0.5)})
_MODEL_GROUPS = {"vit": _VIT, "resnet": _RESNET, "attention_stack": _ATT_STACK,
                 "conv_stack": _CONV_STACK}


class _Sweeps:
    """``{arch: {base: model params, grid: {param: [values]}}}``."""

    allowed = ("a mapping arch: {base: <that arch's parameters>, grid: {parameter: [values]}}, "
               "arch among " + ", ".join(_MODEL_GROUPS))

    def __call__(self, v):
        if not isinstance(v, Mapping) or not v:
            raise _Invalid
        out = {}
        for arch, entry in v.items():
            if arch not in _MODEL_GROUPS:
                raise _Invalid(f"unknown arch {arch!r}; archs: {list(_MODEL_GROUPS)}")
            group = _MODEL_GROUPS[arch]
            if not isinstance(entry, Mapping) or set(entry) != {"base", "grid"}:
                raise _Invalid(f"{arch} must have exactly the keys base and grid")
            try:
                base = group(entry["base"])
            except _Invalid as exc:
                raise _Invalid(f"{arch}.base: {exc or group.allowed}") from None
            grid = entry["grid"]
            if not isinstance(grid, Mapping) or not grid:
                raise _Invalid(f"{arch}.grid must be a non-empty mapping parameter: [values]")
            new_grid = {}
            for name, values in grid.items():
                if name not in group.fields:
                    raise _Invalid(f"{arch}.grid: unknown parameter {name!r}; "
                                   f"parameters: {sorted(group.fields)}")
                check = _List(group.fields[name])
                try:
                    new_grid[name] = check(values)
                except _Invalid as exc:
                    raise _Invalid(f"{arch}.grid.{name}: {exc or check.allowed}") from None
            out[arch] = {"base": base, "grid": new_grid}
        return out


@dataclass(frozen=True)
class Param:
    """One parameter of the chain: name, checker (type, range, allowed values), meaning.

    ``check(value)`` returns the normalised value (``2.0`` → ``2`` for an integer, ``"1e-3"``
    → ``0.001`` for a number) or raises; ``allowed`` says in words what it accepts.
    """

    name: str
    check: Callable[[Any], Any] = field(repr=False)
    help: str
    default: Any = _NO_DEFAULT

    @property
    def allowed(self) -> str:
        return self.check.allowed

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT


_P = Param
SCHEMA: dict[str, Param] = {p.name: p for p in (
    # where results go, data
    _P("results_dir", _Text(), "folder of the run's tables, checkpoints and figures"),
    _P("dataset", _OneOf(*roster.dataset_names()), "image data (mnist: embedded 5,000 digits)"),
    _P("data_root", _Text(), "folder holding cifar-10-batches-py/ (dataset cifar10)"),
    _P("n_train", _Int(1), "training images (class-stratified draw)"),
    _P("n_test", _Int(1), "test images (class-stratified draw)"),
    _P("split_seed", _Int(0), "seed of the train/test draw"),
    # models
    _P("archs", _List(_OneOf(names=_archs)), "architectures trained and compared"),
    _P("vit", _VIT, "parameters of the small ViT (topolip.nets.models.vit)"),
    _P("resnet", _RESNET, "parameters of the small ResNet (topolip.nets.models.resnet)"),
    _P("attention_stack", _ATT_STACK, "parameters of the plain attention stack"),
    _P("conv_stack", _CONV_STACK, "parameters of the plain convolution stack"),
    # training
    _P("seeds", _List(_Int(0)), "training seeds (verdicts need >= 3 a side)"),
    _P("epochs", _Int(1), "training epochs"),
    _P("batch_size", _Int(1), "training batch size"),
    _P("lr", _Float(0.0, lo_open=True), "AdamW learning rate"),
    _P("weight_decay", _Float(0.0), "AdamW weight decay"),
    _P("val_size", _Int(0), "training images held out for validation; the checkpoint with the "
       "best validation accuracy is kept (0: the last epoch; < n_train)"),
    _P("warmup", _Float(0.0, 0.5), "fraction of the training steps in linear learning-rate "
       "warm-up before the cosine decay"),
    _P("augment", _AUGMENT, "random affine augmentation of the training images "
       "(torchvision transforms.v2.RandomAffine): rotate (degrees), translate (fraction of the "
       "side), scale (zoom fraction); all 0: none"),
    _P("threads", _Optional(_Int(1)), "torch CPU threads of training with scheduler: serial "
       "(null: torch's default; 1 on a shared machine)"),
    # where the trainings and per-model measurements run (topolip.tasks)
    _P("scheduler", _Scheduler(), "local (a Dask LocalCluster), serial (in the notebook's "
       "process) or a Dask scheduler address tcp://host:8786", "local"),
    _P("n_workers", _Optional(_Int(1)), "worker processes of the local cluster, one torch "
       "thread each (null: the machine's cores; on a GPU machine they share the GPU)", None),
    _P("scheduler_timeout", _Float(0.0, lo_open=True), "seconds to reach a scheduler given by "
       "its address before the run fails naming it (read by topolip run, not a notebook)", 20.0),
    # TopoLip
    _P("n_points", _Int(2), "test images per point cloud (<= n_test)"),
    # checked by TopoLipSpec.from_params (topolip.topology.spec), which holds the rules
    _P("degrees", _Spec("degrees", "a list of distinct integers >= 0", _integers),
       "homological degrees of the diagrams"),
    _P("p", _Spec("p", "a finite number >= 1 or inf", _number),
       "Wasserstein order (inf: bottleneck)"),
    _P("q", _Spec("q", "one of 1, 2, inf", _number), "ground metric l_q on the plane"),
    _P("n_perm", _Spec("n_perm", "null or an integer >= 2", _integer),
       "greedy subsample size (null: all points)"),
    _P("persistence_backend", _Spec("persistence_backend", "one of 'ripser', 'gudhi'"),
       "who computes the persistence diagrams: ripser (ripser.py, float32) or gudhi (GUDHI's "
       "Ripser port, float64, faster); equal diagrams up to float32 rounding"),
    # robustness
    _P("n_robust", _Int(1), "test images of the accuracy curves (<= n_test)"),
    _P("attack_eps", _List(_EPS), "FGSM/PGD budgets, L-inf in pixels of [0, 1]"),
    _P("masking_probe_steps", _Int(1), "steps of the masking check's short PGD (one start; "
       "PGD elsewhere is the ladder's: ladder_pgd_steps, ladder_pgd_restarts)"),
    _P("severities", _List(_SEVERITY), "corruption severities of the accuracy curves"),
    _P("topolip_strengths", _Strengths(), "kind: strength of the TopoLip measurement "
       "(on attack_eps / severities)"),
    # attack ladder and gradient-masking checks (04_robustness)
    _P("n_ladder", _Int(1), "test images per model of 04's attack ladder and corruption "
       "curves (<= n_test)"),
    _P("ladder_pgd_steps", _Int(1), "steps of PGD: the ladder's, and of the TopoLip, bound "
       "and sweep rows (> masking_probe_steps)"),
    _P("ladder_pgd_restarts", _Int(1), "random restarts of the ladder's PGD (per-image worst)"),
    _P("apgd_steps", _Int(1), "iterations of each APGD run of autoattack (standard: 100)"),
    _P("apgd_target_classes", _Int(1, 9), "target classes of APGD-T: the most likely wrong "
       "classes (standard: 9)"),
    _P("square_queries", _Int(1), "queries per image of the black-box Square attack "
       "(standard: 5000)"),
    _P("n_radius", _Int(1), "test images per model of the minimal adversarial radii (the "
       "seed's first, <= n_test)"),
    _P("radius_eps_max", _Float(0.0, 1.0, lo_open=True), "largest L-inf budget the radii are "
       "searched to (pixels of [0, 1]); an image not broken there is censored"),
    _P("radius_steps", _Int(1), "bisection steps of each radius after its x4 bracket (final "
       "bracket 4 ** (2 ** -steps) wide in ratio)"),
    _P("radius_check_images", _Int(0), "images (the first) FAB also runs on, the radii's "
       "cross-check (<= n_radius; 0: none)"),
    _P("fab_steps", _Int(1), "FAB iterations of the cross-check (AutoAttack's: 100)"),
    _P("masking_large_eps", _EPS, "budget at which PGD must take accuracy to about 0"),
    _P("masking_tolerance", _Float(0.0, 1.0), "slack of the masking checks' accuracy "
       "comparisons"),
    _P("masking_zero_accuracy", _Float(0.0, 1.0), "accuracy below which large_eps_to_zero "
       "passes"),
    # distribution shift
    _P("ood_sets", _List(_OneOf(names=_ood_sets)), "out-of-distribution sets"),
    _P("n_ood", _Int(1), "images per OOD set (<= the smallest chosen set)"),
    # sweeps
    _P("sweep_epochs", _Int(1), "training epochs of the sweep models"),
    _P("sweep_seeds", _List(_Int(0)), "seeds of the sweep models"),
    _P("sweep_perturbations", _Strengths(min_len=1), "kind: strength of the perturbations "
       "measured on every sweep point"),
    _P("sweeps", _Sweeps(), "one-parameter-at-a-time grids around a base model"),
    # theory
    _P("theory_seed", _Int(0), "seed of the random layers"),
    _P("theory_samples", _Int(1), "inputs per random layer"),
    _P("theory_n_iter", _Int(1), "power iterations of the estimate"),
    _P("token_dim", _Int(1), "token dimension D of the random attention layers"),
    _P("theory_heads", _Int(1), "heads of the random attention layers (divide token_dim)"),
    _P("n_tokens", _Int(1), "sequence length of the random attention layers"),
    _P("theory_channels", _Int(1), "channels of the random convolutions"),
    _P("theory_image_size", _Int(1), "side of their inputs, pixels"),
    _P("n_grid", _List(_Int(1)), "token counts of the attention scaling plot"),
    _P("radius_grid", _List(_Float(0.0, lo_open=True)), "token radii of the scaling plot"),
    _P("slope_radius", _Float(0.0, lo_open=True), "radius of the sqrt(n) check"),
    _P("width_grid", _List(_Int(1)), "widths of the scaling plot"),
    _P("max_estimate_tokens", _Int(1), "largest sequence length of the attention estimate"),
    _P("kernel_grid", _List(_Int(1)), "kernel sizes of the convolution plot"),
    _P("channel_grid", _List(_Int(1)), "channel counts of the convolution plot"),
    _P("input_size_grid", _List(_Int(1)), "input sizes of the convolution plot"),
    # bounds against measurement
    _P("bound_kinds", _List(_OneOf(names=lambda: _attack_kinds() + _corruption_kinds())),
       "perturbation kinds whose certified chain 05 checks (kinds of topolip_strengths)"),
    _P("estimate_samples", _Int(1), "clean images of each segment's Jacobian estimate"),
    _P("estimate_n_iter", _Int(1), "power iterations of that estimate"),
    # statistics (verdicts)
    _P("n_boot", _Int(100), "hierarchical bootstrap replicates", 2000),
    _P("min_accuracy", _Float(0.0, 1.0), "clean test accuracy below which a model did not "
       "learn: left out of the measure study (09), counted", 0.5),
    _P("n_image_resamples", _Int(2), "bootstrap resamples of the test and OOD images for the "
       "AUROC (06)", 20),
    _P("alpha", _Float(0.0, 0.5, lo_open=True, hi_open=True), "error rate of the intervals "
       "(before the multiplicity correction)", 0.05),
    # against the literature (10_literature)
    _P("lit_token_sets", _Int(1), "test-token sets per ViT attention block (row 1)", 8),
    _P("lit_radii", _List(_Float(0.0, lo_open=True)), "token scales R of row 1 (Kim et al.)",
       [1.0, 2.0, 4.0, 8.0, 16.0]),
    _P("lit_n_values", _List(_Int(1)), "token counts n of row 2 (Castin et al.)",
       [2, 5, 9, 17, 33, 65]),
    _P("lit_castin_radius", _Float(0.0, lo_open=True), "radius R of the worst-case input "
       "(row 2)", 4.0),
    _P("lit_alphas", _List(_Float(0.0, lo_open=True)), "input scales alpha of row 4 (Hein et "
       "al.)", [1.0, 10.0, 100.0, 1000.0]),
    _P("lit_images", _Int(1), "test images of row 4", 64),
    _P("lit_n_iter", _Int(1), "power iterations of the local constants (rows 1, 2)", 5),
    _P("lit_n_points", _Int(3), "points per class cloud (row 3) and images per batch (rows 5, "
       "6)", 100),
    _P("lit_seeds", _Int(2), "seeds of the MLPs of row 3 (Naitzat et al.)", 5),
    _P("lit_mlp_epochs", _Int(1), "full-batch Adam epochs of the MLPs of row 3", 30),
    _P("lit_eps_adv", _Float(0.0, 1.0, lo_open=True), "L-inf radius of the FGSM images of row 6 "
       "(pixels in [0, 1])", 0.15),
)}


# --------------------------------------------------------------------------- cross-field rules



def _rule_sizes(p):
    if "n_points" in p and "n_test" in p and 2 * p["n_points"] > p["n_test"]:
        yield (("n_points", "n_test"), f"2 * n_points must be <= n_test ({p['n_test']}): the "
               "noise floor compares the clean batch with a disjoint one of the same size")
    if "n_robust" in p and "n_test" in p and p["n_robust"] > p["n_test"]:
        yield ("n_robust", "n_test"), f"n_robust must be <= n_test ({p['n_test']})"
    if "val_size" in p and "n_train" in p and p["val_size"] >= p["n_train"]:
        yield ("val_size", "n_train"), f"val_size must be below n_train ({p['n_train']})"
    if "n_ladder" in p and "n_test" in p and p["n_ladder"] > p["n_test"]:
        yield ("n_ladder", "n_test"), f"n_ladder must be <= n_test ({p['n_test']})"
    if "n_radius" in p and "n_test" in p and p["n_radius"] > p["n_test"]:
        yield ("n_radius", "n_test"), f"n_radius must be <= n_test ({p['n_test']})"
    if "radius_check_images" in p and "n_radius" in p \
            and p["radius_check_images"] > p["n_radius"]:
        yield (("radius_check_images", "n_radius"),
               f"radius_check_images must be <= n_radius ({p['n_radius']})")
    if "masking_probe_steps" in p and "ladder_pgd_steps" in p \
            and p["masking_probe_steps"] >= p["ladder_pgd_steps"]:
        yield (("masking_probe_steps", "ladder_pgd_steps"),
               f"masking_probe_steps ({p['masking_probe_steps']}) must be below "
               f"ladder_pgd_steps ({p['ladder_pgd_steps']}): the masking check compares the "
               "short PGD with the ladder's")
    if {"dataset", "n_train", "n_test"} <= set(p):
        data = roster.dataset(p["dataset"])
        n_tr, n_te = data.train_images, data.test_images
        if n_te is None and p["n_train"] + p["n_test"] > n_tr:
            yield (("n_train", "n_test", "dataset"),
                   f"n_train + n_test must be <= {n_tr} (the {p['dataset']} images)")
        elif n_te is not None and (p["n_train"] > n_tr or p["n_test"] > n_te):
            yield (("n_train", "n_test", "dataset"),
                   f"{p['dataset']} has {n_tr} train and {n_te} test images")


def _rule_strengths(p):
    s = p.get("topolip_strengths")
    if s is None:
        return
    if roster.BUDGET_KIND not in s:
        yield (("topolip_strengths",),
               f"topolip_strengths must hold {roster.BUDGET_KIND}: its eps is the TopoLip budget "
               "at which 04_robustness runs Square and the PGD steps check")
    for kind in p.get("bound_kinds", ()):
        if kind not in s:
            yield (("bound_kinds", "topolip_strengths"),
                   f"bound_kinds: {kind} is not measured (not a kind of topolip_strengths: "
                   f"{', '.join(s)})")
    attacks = _attack_kinds()
    for kind, value in s.items():
        grid, name = (("attack_eps", "attack_eps") if kind in attacks
                      else ("severities", "severities"))
        if grid in p and not any(math.isclose(value, g, rel_tol=1e-9, abs_tol=1e-12)
                                 for g in p[grid]):
            yield (("topolip_strengths", grid),
                   f"topolip_strengths.{kind} = {_fmt(value)} must be on the grid {name} "
                   f"({_fmt(p[grid])})")


def _patch_ok(side: int, params: Mapping) -> bool:
    return "patch_size" not in params or side % params["patch_size"] == 0


def _heads_ok(params: Mapping) -> bool:
    return not ({"hidden_dim", "num_heads"} <= set(params)) or \
        params["hidden_dim"] % params["num_heads"] == 0


def _rule_models(p):
    side = roster.dataset(p["dataset"]).side if "dataset" in p else None
    for arch in roster.arch_names("attention"):
        if arch not in p:
            continue
        if side and not _patch_ok(side, p[arch]):
            yield ((arch, "dataset"), f"{arch}.patch_size = {p[arch]['patch_size']} must divide "
                   f"the image side {side} of {p['dataset']}")
        if not _heads_ok(p[arch]):
            yield (arch,), f"{arch}.hidden_dim must be a multiple of {arch}.num_heads"
    for arch, entry in (p.get("sweeps") or {}).items():
        for name, values in entry["grid"].items():
            for v in values:
                model = {**entry["base"], name: v}
                if side and not _patch_ok(side, model):
                    yield (("sweeps", "dataset"), f"sweeps.{arch}.grid.{name} = {_fmt(v)}: "
                           f"patch_size {model['patch_size']} must divide the image side {side}")
                if not _heads_ok(model):
                    yield (("sweeps",), f"sweeps.{arch}.grid.{name} = {_fmt(v)}: hidden_dim "
                           f"{model['hidden_dim']} is not a multiple of num_heads "
                           f"{model['num_heads']}")
    if {"token_dim", "theory_heads"} <= set(p) and p["token_dim"] % p["theory_heads"]:
        yield ("token_dim", "theory_heads"), "token_dim must be a multiple of theory_heads"


def _rule_ood(p):
    if {"n_ood", "ood_sets"} <= set(p):
        limit = min(roster.ood_set(s).size for s in p["ood_sets"])
        if p["n_ood"] > limit:
            yield (("n_ood", "ood_sets"), f"n_ood must be <= {limit} (the smallest chosen set)")


_RULES = (_rule_sizes, _rule_strengths, _rule_models, _rule_ood)


# --------------------------------------------------------------------------- validation API


def _fmt(v) -> str:
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def _source(sources: Mapping[str, str] | None, name: str) -> str:
    return (sources or {}).get(name, "the parameters passed")


def validate_params(params: Mapping[str, Any], sources: Mapping[str, str] | None = None, *,
                    strict: bool = True) -> dict[str, Any]:
    """Check every parameter against :data:`SCHEMA` and the cross-field rules; normalise.

    Parameters
    ----------
    params : mapping
        Parameter values (a profile with overrides applied).
    sources : mapping of str to str, optional
        Where each value came from (``"profile quick (data/profiles/quick.yml)"``,
        ``"override 'epochs=abc'"``), quoted in the error message.
    strict : bool, default=True
        Refuse names that are not in the schema. ``False`` checks only the names the schema
        knows (the runner, whose test chains declare other names).

    Returns
    -------
    dict
        A copy of ``params`` with normalised values (``2.0`` → ``2`` for an integer, ``"1e-3"``
        → ``0.001`` for a number).

    Raises
    ------
    ParameterError
        One line naming the parameter, the value, what is allowed and where it came from.

    Examples
    --------
    >>> validate_params({"epochs": 2.0, "lr": "1e-3"})
    {'epochs': 2, 'lr': 0.001}
    >>> validate_params({"epochs": "abc"}, {"epochs": "override 'epochs=abc'"})
    Traceback (most recent call last):
    ...
    topolip.pipeline.param_schema.ParameterError: parameter epochs = 'abc' (from override
    'epochs=abc') is not allowed: expected an integer >= 1
    """
    out = {}
    for name, value in params.items():
        spec = SCHEMA.get(name)
        if spec is None:
            if strict:
                raise ParameterError(
                    f"unknown parameter {name!r} (from {_source(sources, name)})"
                    f"{suggest_name(name, SCHEMA)}; `topolip params --schema` lists them")
            out[name] = value
            continue
        try:
            out[name] = spec.check(value)
        except _Invalid as exc:
            detail = f" ({exc})" if str(exc) else ""
            rule = str(exc) if exc.library else f"expected {spec.allowed}{detail}"
            raise ParameterError(
                f"parameter {name} = {_fmt(value)} (from {_source(sources, name)}) is not "
                f"allowed: {rule}") from None
    for rule in _RULES:
        for names, text in rule(out):
            where = "; ".join(
                (f"{n} from " if isinstance(out[n], Mapping) else f"{n} = {_fmt(out[n])} from ")
                + _source(sources, n) for n in names if n in out)
            raise ParameterError(f"parameters {', '.join(names)}: {text} ({where})")
    return out


def schema_defaults() -> dict[str, Any]:
    """``{name: default}`` of the parameters whose schema entry has a default."""
    return {name: p.default for name, p in SCHEMA.items() if p.has_default}


def describe_schema() -> list[str]:
    """One line per parameter: name, what is allowed, default, meaning (``params --schema``)."""
    lines = []
    for name, p in SCHEMA.items():
        default = f"; default {_fmt(p.default)}" if p.has_default else ""
        lines.append(f"{name}: {p.allowed}{default}. {p.help}")
    return lines
