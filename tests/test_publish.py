"""What the book build publishes besides the pages (topolip.pipeline.book.publish_results): the
Figures page, published/<profile>/ with tables, sidecars and glue.json, the launchable
notebooks; and the page fixes of tidy_page. On a hand-made repository, no Sphinx run."""

from __future__ import annotations

import json
import tarfile

import nbformat

from topolip.cli import main
from topolip.pipeline.book import FIGURES_MARKER, stage_book, tidy_page

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082")


def _repo(root):
    root.mkdir()
    (root / "_config.yml").write_text("title: T\nauthor: Us\nrepository: {url: "
                                      "'https://github.com/Owner/repo', branch: launch}\n")
    (root / "_toc.yml").write_text("root: book/intro\nchapters:\n"
                                   "  - file: book/notebooks/02_topolip\n"
                                   "  - file: book/figures\n")
    (root / "book/notebooks").mkdir(parents=True)
    (root / "book/intro.md").write_text("# Intro\n")
    (root / "book/figures.md").write_text(f"# Figures\n\n{FIGURES_MARKER}\n")
    (root / "notebooks").mkdir()
    (root / "notebooks/dependencies.yml").write_text(
        '02_topolip: {reads: ["{results_dir}/tables/models.csv"], writes: []}\n')
    glue = nbformat.v4.new_output("display_data", data={
        "application/papermill.record/text/plain": "'0.916'"},
        metadata={"scrapbook": {"name": "acc-vit"}})
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('results_dir = "results/quick"\n'
                                  'scheduler = "tcp://127.0.0.1:39999"',
                                  metadata={"tags": ["injected-parameters"]}),
        nbformat.v4.new_code_cell("glue", outputs=[glue]),
        nbformat.v4.new_markdown_cell(
            "```{glue:figure} fig-a\n:name: fig-a\n:alt: A line rising\n\nAccuracy "
            "{glue:text}`acc-vit` of the ViT. {glue:md}`fig-a-provenance`\n```")])
    nb.metadata["papermill"] = {"parameters": {"results_dir": "results/quick",
                                               "scheduler": "tcp://127.0.0.1:39999"}}
    nbformat.write(nb, root / "book/notebooks/02_topolip.ipynb")
    res = root / "results/quick"
    (res / "tables").mkdir(parents=True)
    (res / "figures").mkdir()
    (res / "tables/models.csv").write_text("arch,acc\nvit,0.916\n")
    (res / "tables/models.json").write_text("{}")
    (res / "figures/fig-a.png").write_bytes(PNG)
    (res / "figures/fig-a.json").write_text(json.dumps({
        "figure": "fig-a", "profile": "quick", "git_commit": "1a2b3c4d5e", "git_dirty": False,
        "command": "topolip figure fig-a --profile quick", "notebook": "02_topolip",
        "tables": ["tables/models.csv"]}))
    return root


def test_stage_book_publishes_figures_tables_and_glue(tmp_path):
    root = _repo(tmp_path / "repo")
    dest = stage_book(root, tmp_path / "staged")
    out = dest / "_site_extra/published/quick"
    assert (out / "tables/models.csv").read_text() == "arch,acc\nvit,0.916\n"
    assert (out / "tables/models.json").exists() and (out / "figures/fig-a.json").exists()
    assert json.loads((out / "glue.json").read_text()) == {"02_topolip::acc-vit": "0.916"}
    with tarfile.open(out.parent / "quick.tar.gz") as tar:
        assert "quick/tables/models.csv" in tar.getnames()
    page = (dest / "book/figures.md").read_text()
    assert FIGURES_MARKER not in page
    for text in ("## Fig. 1.1: Accuracy 0.916 of the ViT", ":alt: A line rising",
                 "Accuracy 0.916 of the ViT.",
                 "Shown as {numref}`fig-a`", "commit `1a2b3c4`",
                 "regenerate: `topolip figure fig-a --profile quick`",
                 '<a href="../published/quick/tables/models.csv">models.csv</a>',
                 '<a href="../published/quick/figures/fig-a.json">provenance</a>',
                 "@misc{topolip-fig-a-1a2b3c4,",
                 r"\url{https://owner.github.io/repo/book/figures.html#fig-a-entry}"):
        assert text in page, text
    assert (dest / "book/figures/fig-a.png").read_bytes() == PNG
    # the launchable notebook: its install cell fetches the published tables and trains the
    # models it measures; the build's own Dask address is gone
    nb = nbformat.read(dest / "book/notebooks/02_topolip.ipynb", as_version=4)
    first = nb.cells[0].source
    assert "https://owner.github.io/repo/published/quick.tar.gz" in first
    assert '"--only", "01_train"' in first and nb.cells[0].metadata["tags"] == ["remove-cell"]
    assert 'scheduler = "local"' in nb.cells[1].source
    assert nb.metadata["papermill"]["parameters"]["scheduler"] == "local"


def test_tidy_page_fixes_the_theme():
    page = ('<head>\n  <script>const THEBE_JS_URL = "x";</script>\n  <script src="a.js"></script>'
            '\n  <script>const THEBE_JS_URL = "x";</script>\n</head><body>'
            '<button class="btn search-button__button" title="Search" aria-label="Search">'
            '</button><div role="list" class="citation-list"></div></body>')
    tidy = tidy_page(page)
    assert tidy.count("THEBE_JS_URL") == 1 and 'src="a.js"' in tidy
    assert 'aria-label="Search"' not in tidy and 'role="list"' not in tidy
    assert tidy_page(tidy) == tidy


def test_pdf_command_without_a_built_book(tmp_path, capsys):
    assert main(["pdf", "--root", str(tmp_path)]) == 2
    assert "topolip: error:" in capsys.readouterr().err


def test_the_publication_date_is_the_commits(tmp_path):
    import subprocess

    from topolip.pipeline.book import _commit_date

    env = {"GIT_AUTHOR_DATE": "2025-03-04T05:06:07Z", "GIT_COMMITTER_DATE": "2025-03-04T05:06:07Z",
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "--allow-empty", "-m", "x"],
                   check=True, env=env)
    (tmp_path / "sub").mkdir()
    assert _commit_date(str(tmp_path / "sub")) == "2025/03/04"
    assert _commit_date(str(tmp_path.parent / "no-such-folder")) is None


def test_a_launched_chapter_resolves_its_paths_from_book_notebooks(tmp_path):
    # Binder: the package is installed, JupyterLab starts the kernel in book/notebooks/; the
    # first cell must move to the root so results/quick, data/claims.yml and `topolip run` resolve
    import nbclient
    import nbformat as nbf

    from topolip.pipeline.book import install_cell

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'topolip'\n")
    (tmp_path / "topolip").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "claims.yml").write_text("claims: []\n")
    (tmp_path / "results" / "quick" / "tables").mkdir(parents=True)
    start = tmp_path / "book" / "notebooks"
    start.mkdir(parents=True)
    check = nbf.v4.new_code_cell(
        "import pathlib\n"
        "assert pathlib.Path('data/claims.yml').is_file(), pathlib.Path.cwd()\n"
        "assert (_results / 'tables').is_dir()\n"
        "print(pathlib.Path.cwd())")
    nb = nbf.v4.new_notebook(cells=[
        install_cell("https://example.invalid/none.git", site="https://example.invalid/",
                     results_dir="results/quick", profile="quick"), check])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(start)}}).execute()
    assert nb.cells[1].outputs[0]["text"].strip() == str(tmp_path.resolve())
