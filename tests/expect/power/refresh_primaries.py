"""Copy one quick run's primary verdict rows here, for the printed-MDE check of
``tests/test_calibration.py``.

From the repository root, after ``make book`` (the quick profile)::

    PYTHONPATH=. python tests/expect/power/refresh_primaries.py
"""
import subprocess
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).resolve().parent
TABLES = ROOT / "results/quick/tables"
COLUMNS = ["claim", "comparison", "group", "measure", "scale", "effect", "se", "n_pairs"]


def main() -> None:
    """Write ``quick_primaries.csv``: the primary rows with a paired t, and the commit."""
    v = pd.read_csv(TABLES / "verdicts.csv")
    v = v[(v["role"] == "primary") & ~v["comparison"].astype(str).str.startswith("Kendall")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    v[COLUMNS].assign(commit=commit).to_csv(HERE / "quick_primaries.csv", index=False)


if __name__ == "__main__":
    main()
