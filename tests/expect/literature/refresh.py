"""Copy one quick run's literature tables here (trimmed), for ``tests/test_literature_run.py``.

From the repository root, after ``topolip run --profile quick`` (or ``make book``)::

    PYTHONPATH=. python tests/expect/literature/refresh.py
"""
import json
import shutil
from pathlib import Path

import nbformat
import pandas as pd

from topolip.pipeline.book import glue_values

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
TABLES = ROOT / "results/quick/tables"


def main() -> None:
    """Copy the tables and the chapter's glued values."""
    for name in ("lit_attention_growth", "lit_castin", "lit_castin_real", "lit_betti",
                 "lit_confidence", "lit_ood_h0", "lit_adv_share", "literature", "robust_curve"):
        shutil.copy(TABLES / f"{name}.csv", HERE / f"{name}.csv")
    radii = pd.read_csv(TABLES / "radii.csv")
    radii = radii[radii["method"] == "autoattack"][["arch", "seed", "image", "method", "radius",
                                                      "censored", "clean_correct", "eps_max"]]
    radii.to_csv(HERE / "radii.csv", index=False)
    nb = nbformat.read(ROOT / "book/notebooks/10_literature.ipynb", as_version=4)
    glued = {k: v for k, v in glue_values(nb).items() if k.startswith("lit-")}
    (HERE / "glued.json").write_text(json.dumps(glued, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
