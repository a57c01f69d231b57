"""A case's repository named by URL (`inputs.repo`, or `--repo owner/name=URL`): cloned at its base commit, with
every URL form `resolve_repo` accepts, and never waiting on a server that does not answer. Real git, and a real
socket on 127.0.0.1 that accepts and stays silent."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from evalkit.stages import execute
from evalkit.stages.execute import RepoUnmapped, RepoUnreachable, TreeUnavailable, is_remote, tree_at
from fake_docker import silent_server


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin",
                               "HOME": str(cwd)}).stdout.strip()


def upstream(root: Path) -> tuple[Path, str]:
    """A repository whose base commit differs from its HEAD."""
    repo = root / "upstream"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "lib.py").write_text("VALUE = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "lib.py").write_text("VALUE = 2\n")
    git(repo, "commit", "-q", "-am", "later")
    return repo, base


@pytest.mark.parametrize("form", ["path", "file-url"])
def test_the_tree_is_the_base_commit_whatever_the_repository_form(tmp_path: Path, form: str) -> None:
    """``file://`` URLs were taken for folders (`git -C file:///…` failed: the case counted broken)."""
    repo, base = upstream(tmp_path)
    where = str(repo) if form == "path" else f"file://{repo}"
    assert is_remote(where) is (form == "file-url")
    tree = tree_at(where, base, tmp_path / "trees")
    assert (tree / "lib.py").read_text() == "VALUE = 1\n"
    assert not (tree / ".git").exists()


def test_a_repository_that_does_not_exist_is_the_cases_problem(tmp_path: Path) -> None:
    with pytest.raises(TreeUnavailable) as caught:
        tree_at(f"file://{tmp_path}/nowhere", "0" * 40, tmp_path / "trees")
    assert not isinstance(caught.value, RepoUnmapped) and "cannot clone file://" in str(caught.value)


def test_a_server_that_never_answers_is_given_up_as_the_machines_problem(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """git waits on such a server for as long as it stays connected; now it gives up after CLONE_STALL_S seconds
    without a byte, as an infrastructure error (RepoUnmapped's kind: retried next run), and writes no tree."""
    monkeypatch.setattr(execute, "CLONE_STALL_S", 2)
    with silent_server() as server:
        url = server.host.replace("tcp://", "http://") + "/acme/mylib.git"
        start = time.monotonic()
        with pytest.raises(RepoUnreachable) as caught:
            tree_at(url, "0" * 40, tmp_path / "trees")
        took = time.monotonic() - start
    assert isinstance(caught.value, RepoUnmapped)  # what the execute stage records as infra_error
    assert 1.5 <= took < 30, took
    assert "sent nothing for 2 s" in str(caught.value)
    assert not (tmp_path / "trees").exists() or not any((tmp_path / "trees").iterdir())
