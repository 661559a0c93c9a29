"""The deploy workflow runs what CI runs: no drift between .github/workflows/book.yml, .ci/run
and the Makefile; the repository is named in one place."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github/workflows/book.yml"
CI_RUN = ROOT / ".ci/run"


def _workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _make_targets(script: str) -> list[str]:
    return re.findall(r"^\s*(?:TOPOLIP_\w+=\S+\s+)*make\s+([\w-]+)", script, flags=re.M)


def test_the_build_step_is_ci_run_and_ci_run_builds_everything():
    jobs = _workflow()["jobs"]
    build = next(s for s in jobs["build"]["steps"] if s.get("id") == "build")
    assert build["run"].strip() == "bash .ci/run"
    # every other step of the build job only uploads, diffs or comments: none builds on its own
    others = [s.get("run", "") for s in jobs["build"]["steps"] if s.get("id") != "build"]
    assert not any(_make_targets(run) for run in others), others
    assert _make_targets(CI_RUN.read_text()) == ["test", "lint", "book", "pdf", "browser-test"]


def test_the_workflow_deploys_with_the_official_pages_actions():
    data = _workflow()
    assert set(data["on"]) == {"push", "pull_request", "workflow_dispatch"}
    assert data["on"]["push"]["branches"] == ["main"]
    uses = [s.get("uses", "").split("@")[0] for job in data["jobs"].values()
            for s in job["steps"]]
    for action in ("actions/upload-pages-artifact", "actions/configure-pages",
                   "actions/deploy-pages", "actions/cache"):
        assert action in uses, action
    deploy = data["jobs"]["deploy"]
    assert "refs/heads/main" in deploy["if"] and deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    caches = [s["with"]["key"] for s in data["jobs"]["build"]["steps"]
              if s.get("uses", "").startswith("actions/cache")]
    assert any("hashFiles('requirements.lock'" in key for key in caches), caches
    diff = next(s for s in data["jobs"]["build"]["steps"] if s.get("id") == "diff")
    assert "topolip diff" in diff["run"] and "pull_request" in diff["if"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_every_make_target_of_ci_run_exists():
    for target in _make_targets(CI_RUN.read_text()):
        proc = subprocess.run(["make", "-n", "-s", target], cwd=ROOT, capture_output=True,
                              text=True)
        assert proc.returncode == 0, (target, proc.stderr)
        assert proc.stdout.strip(), target


def test_ci_run_uses_sudo_only_when_not_root(tmp_path):
    script = CI_RUN.read_text()
    assert 'if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi' in script
    installs = [line for line in script.splitlines() if "apt-get" in line]
    assert installs and all("$SUDO" in line for line in installs), installs
    # the script's set-up block as a non-root user: apt-get goes through sudo (stand-ins on PATH)
    block = script[script.index('SUDO=""'):script.index("chromium --version")]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "log"
    for name, body in (("id", "echo 1000"), ("sudo", f'echo "sudo $*" >> {log}'),
                       ("apt-get", f'echo "apt-get $*" >> {log}')):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    # PATH holds only the stand-ins: chromium, pdftotext and npm are "missing"
    subprocess.run([shutil.which("bash"), "-c", block], env={"PATH": str(bin_dir)},
                   check=True)
    lines = log.read_text().splitlines()
    assert lines and all(line.startswith("sudo env DEBIAN_FRONTEND=noninteractive apt-get")
                         for line in lines), lines


def test_the_repository_is_named_in_one_place():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["repository-code"] == url
    from topolip.pipeline.book import repository_url

    assert repository_url(ROOT) == url
    # nothing else spells the repository's address
    for path in (WORKFLOW, ROOT / "book/reproduce.md", ROOT / "book/figures.md"):
        assert url not in path.read_text(), path


def test_binder_is_the_lock_with_cpu_torch():
    lock = (ROOT / "requirements.lock").read_text().splitlines()
    binder = [line for line in (ROOT / "binder/requirements.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    assert binder[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    expected = [re.sub(r"^((torch|torchvision)==.*)$", r"\1+cpu", line) for line in lock
                if not re.match(r"^(nvidia-|cuda-|triton==)", line)]
    assert binder[1:] == expected, "run `make binder` after changing requirements.lock"
    assert "torch==" in "\n".join(binder) and not any("nvidia" in b for b in binder)
    assert (ROOT / "binder/postBuild").stat().st_mode & 0o111
