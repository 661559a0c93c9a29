"""Build the Jupyter Book (version 1) from the executed notebooks, without executing them again."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["SOURCES", "build_book", "stage"]

#: What a book build needs from the repository (tests stage these into a scratch folder).
SOURCES = ("_config.yml", "_toc.yml", "book", "notebooks", "data/profiles", "data/claims.yml")


def build_book(root: str | Path = ".", *, strict: bool = True) -> Path:
    """Run ``jupyter-book build`` on ``root``; return ``{root}/_build/html``.

    The book's ``_config.yml`` sets ``execute_notebooks: off``: pages show the notebooks exactly
    as the chain executed them. With ``strict`` (default) Sphinx warnings (a missing executed
    notebook, a broken reference) fail the build.

    Raises
    ------
    RuntimeError
        If the build fails; the message holds the end of the builder's output.
    """
    root = Path(root).resolve()
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe), "build", str(root), "--builder", "html"]
    if strict:
        cmd += ["--warningiserror", "--keep-going"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-4000:]
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}):\n{tail}")
    return root / "_build" / "html"


def stage(root: str | Path, dest: str | Path) -> Path:
    """Copy the book sources of repository ``root`` into ``dest`` (for scratch builds)."""
    root, dest = Path(root), Path(dest)
    for rel in SOURCES:
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("notebooks", "__pycache__")
                            if rel == "book" else shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest
