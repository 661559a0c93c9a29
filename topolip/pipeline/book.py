"""Build the Jupyter Book (version 1) from the executed notebooks, without executing them again.

The build reads only what the book is made of: :func:`stage_book` copies the table of contents'
documents, the configuration and the assets of the folders holding those documents into a
scratch source folder (``_build/.book``), and Sphinx runs there. Stray Markdown anywhere else in
the repository (``.pytest_cache/README.md``, packages under ``.venv``, ``results/``) can never
reach, and so never break, the build.

Each staged notebook gets a first cell (tagged ``remove-cell``: the page does not show it) that
installs the companion when the notebook is opened outside the repository, so the page's
download button and its launch buttons (``_config.yml``) give a runnable ``.ipynb``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import yaml

__all__ = ["SOURCES", "build_book", "install_cell", "stage", "stage_book", "toc_documents"]

#: What a book build needs from the repository (tests stage these into a scratch folder).
SOURCES = ("_config.yml", "_toc.yml", "book", "notebooks", "data/profiles", "data/claims.yml")
#: Suffixes of documents the book reads; other files of a document's folder are assets.
DOC_SUFFIXES = (".md", ".ipynb", ".rst")
#: Where :func:`build_book` stages the sources, under the repository root.
STAGED = Path("_build") / ".book"
#: The repository link when ``_config.yml`` sets none.
DEFAULT_REPOSITORY = "https://github.com/topolip/topolip-companion"


def _entries(node) -> Iterator[str]:
    if isinstance(node, dict):
        for key in ("root", "file"):
            if isinstance(node.get(key), str):
                yield node[key]
        for key in ("parts", "chapters", "sections"):
            for child in node.get(key) or []:
                yield from _entries(child)
    elif isinstance(node, list):
        for child in node:
            yield from _entries(child)


def toc_documents(root: str | Path) -> list[Path]:
    """The documents listed in ``{root}/_toc.yml``, as paths relative to ``root``, in order.

    A toc entry names a file without its suffix; the file is the first of ``.md``, ``.ipynb``,
    ``.rst`` that exists.

    Raises
    ------
    FileNotFoundError
        Naming the entry, when no such file exists (an executed notebook is missing: run the
        chain first).
    """
    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    docs = []
    for entry in _entries(toc):
        stem = Path(entry)
        found = ([stem] if stem.suffix in DOC_SUFFIXES and (root / stem).is_file() else
                 [stem.with_name(stem.name + s) for s in DOC_SUFFIXES
                  if (root / stem.parent / (stem.name + s)).is_file()])
        if not found:
            raise FileNotFoundError(f"_toc.yml lists {entry!r}, but no {entry}.md, .ipynb or .rst "
                                    f"exists under {root} (executed notebooks come from "
                                    f"`topolip run`)")
        docs.append(found[0])
    return docs


def repository_url(root: str | Path = ".") -> str:
    """``repository.url`` of ``{root}/_config.yml`` (the one place the link is set)."""
    config = yaml.safe_load((Path(root) / "_config.yml").read_text()) or {}
    return str((config.get("repository") or {}).get("url") or DEFAULT_REPOSITORY)


def install_cell(repository: str) -> nbformat.NotebookNode:
    """A code cell that, outside the repository, clones it and installs the companion.

    Inside the repository (or wherever ``topolip`` is importable) it does nothing. Tagged
    ``remove-cell``, so the book page does not show it; the downloaded ``.ipynb`` starts with it.
    """
    source = (
        "# Opened outside the repository (Colab, Binder, a download)? This cell fetches the\n"
        "# companion and installs it, then works from its root (profiles, data, earlier results).\n"
        "import importlib.util, os, subprocess, sys\n"
        "if importlib.util.find_spec(\"topolip\") is None:\n"
        f"    subprocess.run([\"git\", \"clone\", \"--depth\", \"1\", \"{repository}\", "
        "\"topolip-companion\"], check=True)\n"
        "    os.chdir(\"topolip-companion\")\n"
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"--quiet\", \"-e\", "
        "\".\"], check=True)\n")
    return nbformat.v4.new_code_cell(source, metadata={"tags": ["remove-cell"]})


def _config_paths(config: dict) -> list[str]:
    """Files and folders ``_config.yml`` points to (bibliography, logo, static and templates)."""
    sphinx = ((config.get("sphinx") or {}).get("config") or {})
    html = config.get("html") or {}
    paths = [*(config.get("bibtex_bibfiles") or []), config.get("logo"), html.get("favicon"),
             *(sphinx.get("html_static_path") or []), *(sphinx.get("html_extra_path") or []),
             *(sphinx.get("templates_path") or [])]
    return [p for p in paths if isinstance(p, str) and p and "://" not in p]


def stage_book(root: str | Path, dest: str | Path) -> Path:
    """Copy exactly what the book is built from into ``dest`` (emptied first); return ``dest``.

    That is ``_config.yml``, ``_toc.yml``, every document of the toc (notebooks with an
    :func:`install_cell` prepended), the files ``_config.yml`` names, and the non-document files
    (images, ``_static``) of the folders that hold toc documents, dot-folders excluded.

    Raises
    ------
    FileNotFoundError
        If a toc entry has no file (see :func:`toc_documents`).
    """
    root, dest = Path(root).resolve(), Path(dest).resolve()
    docs = toc_documents(root)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    config = yaml.safe_load((root / "_config.yml").read_text()) or {}
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(root / name, dest / name)
    folders = sorted({d.parent for d in docs})
    for folder in folders:  # assets next to the documents
        for src in (root / folder).iterdir():
            if src.name.startswith((".", "__")) or src.suffix in (*DOC_SUFFIXES, ".py"):
                continue
            if src.is_file():
                (dest / folder).mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / folder / src.name)
            elif src.is_dir() and not any((Path(folder) / src.name) == f or
                                          (Path(folder) / src.name) in f.parents
                                          for f in folders):
                shutil.copytree(src, dest / folder / src.name, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns(".*", "__pycache__", "*.md",
                                                              "*.ipynb", "*.rst"))
    for rel in _config_paths(config):
        src = root / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, dirs_exist_ok=True)
        elif src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    repository = repository_url(root)
    for doc in docs:
        (dest / doc).parent.mkdir(parents=True, exist_ok=True)
        if doc.suffix == ".ipynb":
            nb = nbformat.read(root / doc, as_version=4)
            nb.cells.insert(0, install_cell(repository))
            nbformat.write(nb, dest / doc)
        else:
            shutil.copy2(root / doc, dest / doc)
    return dest


def build_book(root: str | Path = ".", *, strict: bool = True) -> Path:
    """Stage the book's sources (:func:`stage_book`), run ``jupyter-book build`` on them, and
    return ``{root}/_build/html``.

    The book's ``_config.yml`` sets ``execute_notebooks: off``: pages show the notebooks exactly
    as the chain executed them. With ``strict`` (default) Sphinx warnings (a missing executed
    notebook, a broken reference) fail the build.

    Raises
    ------
    FileNotFoundError
        If a document of the table of contents is missing.
    RuntimeError
        If the build fails; the message holds the end of the builder's output.
    """
    root = Path(root).resolve()
    source = stage_book(root, root / STAGED)
    exe = Path(sys.executable).parent / "jupyter-book"
    cmd = [str(exe), "build", str(source), "--builder", "html", "--path-output", str(root)]
    if strict:
        cmd += ["--warningiserror", "--keep-going"]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-4000:]
        raise RuntimeError(f"jupyter-book build failed (exit {proc.returncode}):\n{tail}")
    return root / "_build" / "html"


def stage(root: str | Path, dest: str | Path) -> Path:
    """Copy the sources of repository ``root`` that the notebook chain and the book need into
    ``dest`` (for scratch runs and builds in tests)."""
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
