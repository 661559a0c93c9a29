"""Declared schemas of the CSV tables the notebook chain writes under
``results/<profile>/tables/``, the one reader and writer that apply them, and the one column
check of every table function.

Torch-free (pandas and :mod:`topolip.io` only). A table's schema lists its columns in order,
each with a dtype and what a missing value looks like:

========  ==================================================================================
dtype     written as / read back as
========  ==================================================================================
``int``   an integer; read back as ``int64``
``float`` 10 significant digits (``%.10g``); NaN as the empty field, ±∞ as ``inf``/``-inf``;
          read back as ``float64`` (also when every value is integral, which the text alone
          would read as ``int64``)
``bool``  ``True``/``False``; read back as ``bool``
``str``   the text; a missing value (NaN) as the empty field, read back as NaN
``text``  the text, where ``""`` is a value ("no flag", "no verdict"): written as the empty
          field, read back as ``""`` (object dtype), never NaN
========  ==================================================================================

:func:`write_table` writes a frame as it is (never reorders or reformats it, so a table keeps
its bytes) after checking it against its schema: every required column present, the declared
columns in the declared order, no undeclared column unless the schema is ``open``.
:func:`read_table` reads it back with the declared dtypes. A table is found by its file's stem
(``tables/topolip.csv`` -> :data:`SCHEMAS` ``["topolip"]``).
"""

from __future__ import annotations

import io as _io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from topolip.io import atomic_write_text

__all__ = [
    "DTYPES", "FLOAT_FORMAT", "LOCAL", "SCHEMAS", "Column", "TableSchema", "frame", "read_table",
    "require_columns", "schema_for", "write_table",
]

#: The ``perturbation`` of ``bounds.csv``'s rows of local bounds at the clean batch (its other
#: rows name the perturbation whose certified chain they hold).
LOCAL = "none (local)"

#: How every real number of a table is written (10 significant digits, byte-stable).
FLOAT_FORMAT = "%.10g"

#: The dtypes a column may declare (see the module docstring).
DTYPES: tuple[str, ...] = ("int", "float", "bool", "str", "text")


def require_columns(table: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    """Raise unless ``table`` has every one of ``columns``: the one column check of the table
    functions, the figures and :func:`write_table`.

    Parameters
    ----------
    table : pandas.DataFrame
        The table checked.
    columns : iterable of str
        The columns it needs (duplicates are reported once).
    name : str
        What the table is called in the message (``"summary"``, ``"tables/topolip.csv"``).

    Raises
    ------
    ValueError
        ``"<name> lacks column(s) [...]; it has [...]"``, naming the missing columns in the
        order asked and the columns the table has.

    Examples
    --------
    >>> require_columns(pd.DataFrame({"a": [1]}), ["a", "b"], "t")
    Traceback (most recent call last):
    ...
    ValueError: t lacks column(s) ['b']; it has ['a']
    """
    missing = [c for c in dict.fromkeys(columns) if c not in table.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(table.columns)}")


@dataclass(frozen=True)
class Column:
    """One declared column.

    Attributes
    ----------
    name : str
        The column's header.
    dtype : str
        One of :data:`DTYPES`.
    optional : bool, default=False
        True when the column may be absent (e.g. the baseline measures, computed only when
        asked for); when present it stands at its declared place.
    """

    name: str
    dtype: str
    optional: bool = False

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"column {self.name!r}: unknown dtype {self.dtype!r}; "
                             f"known: {list(DTYPES)}")


@dataclass(frozen=True)
class TableSchema:
    """The declared form of one table.

    Attributes
    ----------
    name : str
        The file's stem (``"topolip"`` for ``tables/topolip.csv``).
    columns : tuple of Column
        In the order they are written.
    writer : str
        The notebook that writes the table.
    open : bool, default=False
        True when undeclared columns may follow (they are read as pandas infers them).
    """

    name: str
    columns: tuple[Column, ...]
    writer: str
    open: bool = False

    def __post_init__(self):
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"schema {self.name!r} declares a column twice: {names}")

    @property
    def names(self) -> tuple[str, ...]:
        """Every declared column's name, in order."""
        return tuple(c.name for c in self.columns)

    @property
    def required(self) -> tuple[str, ...]:
        """The columns that must be present, in order."""
        return tuple(c.name for c in self.columns if not c.optional)

    def dtype(self, column: str) -> str:
        """The declared dtype of ``column``.

        Raises
        ------
        KeyError
            Naming the column and the table's declared columns.
        """
        for c in self.columns:
            if c.name == column:
                return c.dtype
        raise KeyError(f"table {self.name!r} declares no column {column!r}; "
                       f"it declares {list(self.names)}")

    def check(self, table: pd.DataFrame, where: str | None = None) -> None:
        """Raise unless ``table`` has this schema's columns, in order.

        A frame with no rows and no columns (what pandas builds from an empty list of rows)
        passes: it is written as an empty file.

        Raises
        ------
        ValueError
            Naming the table and the missing (:func:`require_columns`), misplaced or
            undeclared columns.
        """
        where = where or f"table {self.name!r}"
        if table.shape == (0, 0):
            return
        require_columns(table, self.required, where)
        cols = [str(c) for c in table.columns]
        extra = [c for c in cols if c not in self.names]
        if extra and not self.open:
            raise ValueError(f"{where} has undeclared column(s) {extra}; its schema declares "
                             f"{list(self.names)} (topolip.schema.SCHEMAS[{self.name!r}])")
        present = [c for c in cols if c in self.names]
        expected = [c for c in self.names if c in present]
        if present != expected:
            raise ValueError(f"{where} has its columns out of order: {present}; the schema's "
                             f"order is {expected}")

    def apply(self, table: pd.DataFrame, where: str | None = None) -> pd.DataFrame:
        """``table`` (as read from CSV) with the declared dtypes: ``float`` columns as
        ``float64``, ``text`` columns with ``""`` for the empty field; the others as read.

        Raises
        ------
        ValueError
            If a numeric or boolean column holds text (a damaged or foreign file), naming the
            table and the column.
        """
        where = where or f"table {self.name!r}"
        out = table.copy()
        for c in self.columns:
            if c.name not in out:
                continue
            s = out[c.name]
            if c.dtype in ("int", "float") and not (pd.api.types.is_numeric_dtype(s)
                                                     or s.isna().all()):
                raise ValueError(f"{where}: column {c.name!r} is declared {c.dtype} but holds "
                                 f"text, e.g. {s[s.notna()].iloc[0]!r}")
            if c.dtype == "float":
                out[c.name] = s.astype("float64")
            elif c.dtype == "text":
                out[c.name] = s.astype(object).fillna("")
            elif c.dtype == "bool" and not (pd.api.types.is_bool_dtype(s) or s.isna().any()):
                raise ValueError(f"{where}: column {c.name!r} is declared bool but holds "
                                 f"{s.iloc[0]!r}")
        return out


def _table(name: str, writer: str, spec: str, *, optional: Sequence[str] = (),
           open: bool = False) -> TableSchema:
    """A schema from ``"column:dtype column:dtype ..."``."""
    cols = []
    for item in spec.split():
        col, _, dtype = item.rpartition(":")
        cols.append(Column(col.replace("~", " "), dtype, optional=col in optional))
    unknown = set(optional) - {c.name for c in cols}
    if unknown:
        raise ValueError(f"schema {name!r}: optional columns {sorted(unknown)} not declared")
    return TableSchema(name, tuple(cols), writer, open)


# the measures of the per-model summaries; the baselines are computed only when asked for
_SUMMARY = ("end_to_end:float geometric_mean:float max:float end_to_end_scale_free:float "
            "geometric_mean_scale_free:float max_scale_free:float")
_BASELINES = ("displacement_ratio_max", "displacement_ratio_mean", "rtd_lite_ratio",
              "cka_distance", "log10_lipschitz_estimate_product",
              "log10_spectral_norm_product", "logit_margin", "parameters")
_BASELINE_COLS = ("displacement_ratio_max:float displacement_ratio_mean:float "
                  "rtd_lite_ratio:float cka_distance:float "
                  "log10_lipschitz_estimate_product:float log10_spectral_norm_product:float "
                  "logit_margin:float parameters:int")
_PER_MODEL = ("n_images:int n_points:int n_layers:int " + _SUMMARY + " end_to_end_flag:str "
              "n_flagged:int accuracy_clean:float accuracy_perturbed:float "
              "accuracy_drop:float relative_drop:float " + _BASELINE_COLS)
_LAYERS = ("layer:str depth:int dim:int scale:float delta:float delta_scale_free:float "
           "r_cover:float eps:float bottleneck:float envelope:float topolip:float "
           "topolip_scale_free:float topolip_reason:str")

#: Every table of the chain, by file stem, in the order the notebooks write them.
SCHEMAS: dict[str, TableSchema] = {t.name: t for t in (
    _table("theory_layers", "00_theory", "layer:str bound:float estimate:float "
           "bound~/~estimate:float"),
    _table("theory_attention", "00_theory", "n:int R:float width:int bound:float "
           "estimate:float"),
    _table("theory_conv", "00_theory", "sweep:str value:int certified:float method:str "
           "circular:float cheap:float estimate:float"),
    _table("models", "01_train", "arch:str seed:int train_accuracy:float val_accuracy:float "
           "test_accuracy:float best_epoch:int parameters:int flops:int epochs:int "
           "train_seconds:float threads:int checkpoint:str"),
    _table("training", "01_train", "arch:str seed:int epoch:int loss:float "
           "train_accuracy:float val_accuracy:float lr:float seconds:float threads:int"),
    _table("topolip", "02_topolip", "arch:str seed:int perturbation:str strength:float "
           + _LAYERS + " noise_floor:float noise_floor_scale_free:float "
           "within_noise_floor:bool flag:text"),
    _table("topolip_summary", "02_topolip", "arch:str seed:int perturbation:str "
           "strength:float " + _PER_MODEL, optional=_BASELINES),
    _table("robustness", "04_robustness", "arch:str seed:int perturbation:str strength:float "
           "unit:str n:int accuracy:float accuracy_clean:float accuracy_drop:float "
           "steps:float restarts:float"),
    _table("masking", "04_robustness", "arch:str seed:int check:str passed:bool value:float "
           "detail:str"),
    _table("radii", "04_robustness", "arch:str seed:int image:int label:int method:str "
           "radius:float censored:bool clean_correct:bool eps_max:float attacks:float"),
    _table("radius_summary", "04_robustness", "arch:str seed:int method:str group:str "
           "n_images:int clean_accuracy:float median_radius:float log_median_radius:float "
           "n_censored:int eps_max:float eps:float robust_accuracy_at_eps:float "
           "attacks:float"),
    _table("radius_matched", "04_robustness", "arch:str seed:int method:str group:str "
           "n_images:int clean_accuracy:float median_radius:float log_median_radius:float "
           "n_censored:int eps_max:float eps:float robust_accuracy_at_eps:float "
           "attacks:float epoch:int val_accuracy:float best_epoch:int best_val_accuracy:float "
           "matched_to:str target_val_accuracy:float"),
    _table("radius_check", "04_robustness", "arch:str seed:int n:int n_only_bisection:int "
           "n_only_fab:int median_ratio:float share_within:float factor:float"),
    _table("robust_curve", "04_robustness", "arch:str seed:int method:str eps:float "
           "robust_accuracy:float clean_accuracy:float"),
    _table("smoothness", "04_robustness", "group:str response:str level:str role:str "
           "partial:bool n:int n_arch:int min_seeds:int seeds_present:int n_excluded:int "
           "tau:float pvalue:float p_adjusted:float mc_se:float n_permutations:int exact:bool "
           "min_pvalue:float family_floor:float seeds_needed:int"),
    _table("bounds", "05_bounds_vs_measured", "arch:str seed:int perturbation:str layer:str "
           "depth:int segment:str n_tokens:float input_radius:float bound:float "
           "estimate:float ratio:float chained_bound:float margin:float eps:float "
           "eps_bound_step:float eps_bound_chain:float envelope_chain:float"),
    _table("bound_looseness", "05_bounds_vs_measured", "segment:str archs:str layers:int "
           "max_ratio:float median_ratio:float max_bound:float"),
    _table("ood_topolip", "06_ood", "arch:str seed:int ood_set:str n_clean:int n_ood:int "
           + _LAYERS),
    _table("ood_topolip_summary", "06_ood", "arch:str seed:int ood_set:str " + _SUMMARY),
    _table("ood_behaviour", "06_ood", "arch:str seed:int dataset:str n:int "
           "mean_confidence:float median_confidence:float accuracy:float auroc:float "
           "auroc_max_logit:float auroc_energy:float",
           optional=("auroc_max_logit", "auroc_energy")),
    _table("ood_resamples", "06_ood", "arch:str seed:int group:str measure:str resample:int "
           "value:float"),
    _table("sweeps", "07_sweeps", "arch:str parameter:str value:str value_numeric:float "
           "is_base:bool seed:int perturbation:str strength:float " + _PER_MODEL
           + " test_accuracy:float val_accuracy:float best_epoch:int checkpoint:str",
           optional=_BASELINES),
    _table("verdicts", "08_verdict", "claim:str comparison:str verdict:str group:str "
           "measure:str role:str family:str scale:str attention:float convolution:float "
           "effect:float low:float high:float coverage:float ratio:float ratio_low:float "
           "ratio_high:float pvalue:float p_adjusted:float se:float sd:float df:float "
           "n_pairs:int n_excluded:int n_seeds:str n_images:float mc_se:float flag:str "
           "detail:str"),
    _table("measure_population", "09_measures", "source:str model:str arch:str seed:int "
           "axis:str value:str is_base:bool perturbation:str strength:float excluded:bool "
           "did_not_learn:bool accuracy_drop:float end_to_end_scale_free:float "
           "geometric_mean_scale_free:float "
           "end_to_end:float rtd_lite_ratio:float displacement_ratio_max:float "
           "displacement_ratio_mean:float cka_distance:float "
           "log10_lipschitz_estimate_product:float log10_spectral_norm_product:float "
           "logit_margin:float parameters:int accuracy_clean:float",
           optional=("end_to_end_scale_free", "geometric_mean_scale_free", "end_to_end",
                     *_BASELINES, "accuracy_clean")),
    _table("measure_study", "09_measures", "perturbation:str role:str measure:str label:str "
           "kind:str baseline:bool n_models:int n_excluded:int n_archs:int n_seeds:int "
           "n_pairs:int tau_within:float p_within:float n_permutations:int p_mc_se:float "
           "rank:float n_ranked:int tau_pooled:float diff:float diff_se:float diff_df:float "
           "p_diff:float p_within_holm:float p_diff_holm:float diff_low:float "
           "diff_high:float comparison:text granulated_tau:float n_axes:int "
           "n_families:int"),
    _table("measure_granulated", "09_measures", "perturbation:str measure:str arch:str "
           "axis:str tau:float n_settings:int n_models:int"),
    _table("lit_attention_growth", "10_literature", "arch:str seed:int block:str R:float "
           "measured:float bound:float"),
    _table("lit_castin", "10_literature", "arch:str seed:int block:str head:int n:int "
           "measured:float bound_ours:float bound_theirs:float"),
    _table("lit_castin_real", "10_literature", "arch:str seed:int block:str head:int n:int "
           "measured:float n_sets:int"),
    _table("lit_confidence", "10_literature", "arch:str seed:int alpha:float relu:bool "
           "confidence:float"),
    _table("lit_betti", "10_literature", "arch:str seed:int layer:int label:int n:int "
           "scale:float betti0:int betti1:int"),
    _table("lit_ood_h0", "10_literature", "arch:str seed:int ood_set:str auc:float "
           "p_value:float median_ood:float median_test:float"),
    _table("lit_adv_share", "10_literature", "arch:str seed:int fraction:float n_adv:int "
           "total_persistence:float"),
    _table("literature", "10_literature", "id:str kind:str title:str source:str rule:text "
           "our_number:float low:float high:float verdict:str reason:text chapter:str "
           "rival_of:text", optional=("rival_of",)),
)}


def schema_for(table: str | Path | TableSchema) -> TableSchema:
    """The schema of a table given by name (``"topolip"``), file (``tables/topolip.csv``) or
    schema.

    Raises
    ------
    KeyError
        Naming the table and the declared ones, if none is declared for it.

    Examples
    --------
    >>> schema_for("results/quick/tables/models.csv").required[:3]
    ('arch', 'seed', 'train_accuracy')
    """
    if isinstance(table, TableSchema):
        return table
    stem = Path(table).stem if str(table).endswith(".csv") else str(table)
    try:
        return SCHEMAS[stem]
    except KeyError:
        raise KeyError(f"no schema declared for table {stem!r}; declared: "
                       f"{list(SCHEMAS)} (topolip.schema.SCHEMAS)") from None


def frame(table: str | Path | TableSchema, rows: Iterable[dict]) -> pd.DataFrame:
    """A table built from ``rows`` (one mapping per row) with its schema's columns, in the
    declared order whatever the order of each row's keys.

    Raises
    ------
    KeyError
        If no schema is declared for ``table``.
    ValueError
        If a row lacks a required column or has an undeclared one.

    Examples
    --------
    >>> frame("ood_resamples", [{"seed": 0, "arch": "vit", "group": "digits",
    ...                          "measure": "auroc", "resample": 0, "value": 0.5}]).columns[:2]
    Index(['arch', 'seed'], dtype='str')
    """
    spec = schema_for(table)
    rows = list(rows)
    for i, row in enumerate(rows):
        missing = [c for c in spec.required if c not in row]
        extra = [c for c in row if c not in spec.names]
        if missing or extra:
            raise ValueError(f"row {i} of table {spec.name!r}: "
                             + "; ".join(m for m in (missing and f"lacks {missing}",
                                                     extra and f"has undeclared {extra}") if m))
    present = [c for c in spec.names if any(c in row for row in rows)] if rows else \
        list(spec.required)
    return pd.DataFrame(rows, columns=present)


def _path(table: str | Path, root: str | Path | None) -> Path:
    path = Path(table)
    if path.suffix != ".csv":
        path = path.with_suffix(".csv")
    return Path(root) / path if root is not None else path


def write_table(df: pd.DataFrame, path: str | Path, *,
                schema: TableSchema | None = None) -> Path:
    """Check ``df`` against its schema and write it as CSV, atomically and byte-stably.

    The frame is written as it is: no index, reals with :data:`FLOAT_FORMAT`, NaN as the empty
    field (and ``""`` of a ``text`` column likewise), ±∞ as ``inf``/``-inf``.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    path : str or Path
        Where to write it; its stem names the schema unless ``schema`` is given.
    schema : TableSchema, optional
        The schema to check against (default: :func:`schema_for` of ``path``).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    KeyError
        If no schema is declared for ``path``'s stem.
    ValueError
        If ``df`` lacks a required column, has its declared columns out of order or an
        undeclared column (:meth:`TableSchema.check`).

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "ood_resamples.csv"
    >>> t = pd.DataFrame({"arch": ["vit"], "seed": [0], "group": ["digits"],
    ...                   "measure": ["auroc"], "resample": [0], "value": [0.8351190001]})
    >>> print(write_table(t, p).read_text(), end="")
    arch,seed,group,measure,resample,value
    vit,0,digits,auroc,0,0.8351190001
    """
    path = Path(path)
    spec = schema_for(path) if schema is None else schema
    spec.check(df, f"table {str(path)!r}")
    atomic_write_text(path, df.to_csv(index=False, float_format=FLOAT_FORMAT))
    return path


def read_table(path: str | Path, *, root: str | Path | None = None,
               schema: TableSchema | None = None) -> pd.DataFrame:
    """Read a table written by :func:`write_table`, with its declared dtypes.

    Parameters
    ----------
    path : str or Path
        The CSV file, or a table's name (``"topolip"``) under ``root``.
    root : str or Path, optional
        Folder the name is resolved against (e.g. ``results/quick/tables``).
    schema : TableSchema, optional
        Default: :func:`schema_for` of the file's stem.

    Returns
    -------
    pandas.DataFrame
        ``float`` columns as ``float64``, ``text`` columns with ``""`` for the empty field,
        the others as pandas reads them; a file with no columns as an empty frame.

    Raises
    ------
    FileNotFoundError
        When the file is missing (run the notebook that writes it first).
    KeyError
        If no schema is declared for the table.
    ValueError
        If the file lacks a required column, has undeclared columns, or a numeric column
        holds text.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "ood_resamples.csv"
    >>> _ = write_table(pd.DataFrame({"arch": ["vit"], "seed": [0], "group": ["digits"],
    ...                               "measure": ["auroc"], "resample": [0], "value": [1.0]}), p)
    >>> read_table(p)["value"].dtype   # "1" in the file, a float as declared
    dtype('float64')
    """
    path = _path(path, root)
    spec = schema_for(path) if schema is None else schema
    if not path.exists():
        raise FileNotFoundError(f"no table at {path}; run the notebook that writes it "
                                f"({spec.writer}) or the chain (make book) first")
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return pd.DataFrame()
    table = pd.read_csv(_io.StringIO(text))
    where = f"table {str(path)!r}"
    spec.check(table, where)
    return spec.apply(table, where)
