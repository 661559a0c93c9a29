"""The table schemas (topolip.schema): every table of the chain declared, written as it is,
read back with its declared dtypes and sentinels, and checked by the one column check."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topolip import schema
from topolip.schema import SCHEMAS, read_table, require_columns, write_table

ROOT = Path(__file__).resolve().parents[1]

#: Three values per dtype: a plain one, the dtype's sentinel, an edge case.
_VALUES = {
    "int": [0, 7, -3],
    "float": [0.123456789012345, math.nan, math.inf],
    "bool": [True, False, True],
    "str": ["vit", math.nan, "a, b \"quoted\""],
    "text": ["", "denominator within the noise floor", ""],
}


def _example(spec: schema.TableSchema) -> pd.DataFrame:
    return pd.DataFrame({c.name: _VALUES[c.dtype] for c in spec.columns})


def _notebook_tables() -> set[str]:
    """The stems of every ``tables/<name>.csv`` a notebook reads or writes."""
    names = set()
    for nb in sorted((ROOT / "notebooks").glob("*.py")):
        names |= set(re.findall(r'(?:tables|tables_dir|"tables")\s*/\s*"([a-z0-9_]+)\.csv"',
                                nb.read_text()))
    return names


def test_every_table_a_notebook_writes_is_declared():
    written = _notebook_tables()
    assert len(written) >= 20, written
    assert written == set(SCHEMAS), (written ^ set(SCHEMAS))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_round_trip_keeps_columns_dtypes_sentinels_and_bytes(name, tmp_path):
    spec = SCHEMAS[name]
    df = _example(spec)
    path = write_table(df, tmp_path / f"{name}.csv")
    text = path.read_text()
    assert text.splitlines()[0] == ",".join(f'"{c}"' if "," in c else c for c in spec.names)
    back = read_table(path)
    assert list(back.columns) == list(spec.names)
    for c in spec.columns:
        got = back[c.name]
        if c.dtype == "int":
            assert got.dtype == np.int64 and got.tolist() == _VALUES["int"]
        elif c.dtype == "float":
            assert got.dtype == np.float64
            assert got.iloc[0] == pytest.approx(_VALUES["float"][0], rel=1e-9)  # 10 digits
            assert math.isnan(got.iloc[1]) and got.iloc[2] == math.inf
        elif c.dtype == "bool":
            assert got.dtype == bool and got.tolist() == _VALUES["bool"]
        elif c.dtype == "str":
            assert got.iloc[0] == "vit" and pd.isna(got.iloc[1]) and got.iloc[2] == _VALUES[
                "str"][2]
        else:
            assert got.tolist() == _VALUES["text"] and not got.isna().any()
    write_table(back, tmp_path / "again" / f"{name}.csv")
    assert (tmp_path / "again" / f"{name}.csv").read_bytes() == path.read_bytes()


def test_floats_are_written_with_ten_digits_and_integral_floats_read_back_as_floats(tmp_path):
    t = pd.DataFrame({"arch": ["vit", "resnet"], "seed": [0, 1], "group": ["digits"] * 2,
                      "measure": ["auroc"] * 2, "resample": [0, 1], "value": [3.0, -math.inf]})
    p = write_table(t, tmp_path / "ood_resamples.csv")
    assert p.read_text().splitlines()[1:] == ["vit,0,digits,auroc,0,3",
                                              "resnet,1,digits,auroc,1,-inf"]
    assert p.read_bytes() == t.to_csv(index=False, float_format="%.10g").encode()
    back = read_table("ood_resamples", root=tmp_path)
    assert back["value"].dtype == np.float64 and back["value"].tolist() == [3.0, -math.inf]


def test_optional_columns_may_be_absent_but_not_misplaced(tmp_path):
    spec = SCHEMAS["topolip_summary"]
    full = _example(spec)
    without = full.drop(columns=["rtd_lite_ratio", "cka_distance", "parameters"])
    write_table(without, tmp_path / "topolip_summary.csv")
    assert list(read_table(tmp_path / "topolip_summary.csv").columns) == list(without.columns)
    moved = full[[*spec.names[1:], spec.names[0]]]
    with pytest.raises(ValueError, match="out of order"):
        write_table(moved, tmp_path / "topolip_summary.csv")


def test_a_missing_column_raises_the_one_message(tmp_path):
    df = _example(SCHEMAS["models"]).drop(columns=["flops"])
    with pytest.raises(ValueError, match=r"models\.csv' lacks column\(s\) \['flops'\]; it has "
                                         r"\['arch', 'seed'"):
        write_table(df, tmp_path / "models.csv")
    (tmp_path / "models.csv").write_text(df.to_csv(index=False))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['flops'\]"):
        read_table(tmp_path / "models.csv")


def test_the_table_functions_use_the_one_check():
    from topolip.evidence import bound_tables, claims, masking
    from topolip.evidence import measures as measure_study
    from topolip.report import figures

    empty = pd.DataFrame({"arch": ["vit"]})
    calls = [
        lambda: bound_tables.bound_looseness(empty),
        lambda: claims.smoothness_table(empty),
        lambda: figures.plot_sweep(empty, "vit"),
        lambda: masking.masking_summary(empty),
        lambda: measure_study.measure_population(empty),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r"^\S+ lacks column\(s\) \[.*\]; it has \['arch'\]$"):
            call()
    with pytest.raises(ValueError, match=r"^t lacks column\(s\) \['b'\]; it has \['a'\]$"):
        require_columns(pd.DataFrame({"a": [1]}), ["a", "b", "b"], "t")


def test_no_other_module_spells_the_column_message():
    """One message, one place: no module but topolip.schema builds "lacks column(s)"."""
    hits = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "topolip").rglob("*.py"))
            if p.name != "schema.py" and "lacks column" in p.read_text()]
    assert hits == []


def test_undeclared_columns_tables_and_text_in_numbers_are_refused(tmp_path):
    df = _example(SCHEMAS["models"]).assign(extra=1)
    with pytest.raises(ValueError, match=r"undeclared column\(s\) \['extra'\]"):
        write_table(df, tmp_path / "models.csv")
    with pytest.raises(KeyError, match="no schema declared for table 'mystery'; declared: "):
        write_table(df, tmp_path / "mystery.csv")
    with pytest.raises(KeyError, match="no schema declared"):
        read_table(tmp_path / "mystery.csv")
    bad = _example(SCHEMAS["models"]).astype({"seed": str})
    bad.loc[0, "seed"] = "zero"
    (tmp_path / "models.csv").write_text(bad.to_csv(index=False))
    with pytest.raises(ValueError, match=r"column 'seed' is declared int but holds text"):
        read_table(tmp_path / "models.csv")


def test_a_missing_table_names_its_notebook(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no table at .*bounds\.csv; run the notebook "
                                                r"that writes it \(05_bounds_vs_measured\)"):
        read_table("bounds", root=tmp_path)


def test_an_empty_table_of_no_columns_round_trips(tmp_path):
    p = write_table(pd.DataFrame(), tmp_path / "ood_resamples.csv")
    assert read_table(p).shape == (0, 0)


def test_frame_orders_the_declared_columns_and_checks_rows():
    row = {"checkpoint": "m.pt", "arch": "vit", "seed": 0, "test_accuracy": 0.9,
           "train_accuracy": 0.95, "val_accuracy": 0.92, "best_epoch": 1, "parameters": 10,
           "flops": 20, "epochs": 1, "train_seconds": 1.5, "threads": 1}
    t = schema.frame("models", [row])
    assert list(t.columns) == list(SCHEMAS["models"].names)
    with pytest.raises(ValueError, match=r"row 0 of table 'models': lacks \['checkpoint'\]"):
        schema.frame("models", [{k: v for k, v in row.items() if k != "checkpoint"}])
    with pytest.raises(ValueError, match=r"has undeclared \['gpu'\]"):
        schema.frame("models", [{**row, "gpu": True}])


def test_schemas_are_well_formed():
    with pytest.raises(ValueError, match="unknown dtype 'complex'"):
        schema.Column("x", "complex")
    with pytest.raises(ValueError, match="declares a column twice"):
        schema.TableSchema("t", (schema.Column("a", "int"), schema.Column("a", "int")), "nb")
    for name, spec in SCHEMAS.items():
        assert spec.name == name and (ROOT / "notebooks" / f"{spec.writer}.py").exists()
        assert spec.dtype(spec.names[0]) in schema.DTYPES
    with pytest.raises(KeyError, match="declares no column 'nope'"):
        SCHEMAS["models"].dtype("nope")


def test_the_pipeline_reads_and_writes_through_the_schema(tmp_path):
    from topolip.pipeline.provenance import read_table as pipeline_read
    from topolip.pipeline.provenance import write_table as pipeline_write

    df = _example(SCHEMAS["topolip"])
    path = pipeline_write(df, tmp_path / "topolip.csv", {"seed": 0})
    assert path.with_suffix(".json").exists()
    assert pipeline_read(path)["flag"].tolist() == _VALUES["text"]
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['flag'\]"):
        pipeline_write(df.drop(columns=["flag"]), tmp_path / "topolip.csv")
