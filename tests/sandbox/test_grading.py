"""Resolution, flaky policies, nonce markers, the runner script and tree archives; no Docker needed."""

from __future__ import annotations

import io
import tarfile

import pytest

from evalkit.sandbox.archive import TarBuilder, read_tar_files, tree_digest
from evalkit.sandbox.grading import grade, merge_rerun
from evalkit.sandbox.phase import PhaseOutcome
from evalkit.sandbox.script import rerun_command, runner_script, split_junit_path
from evalkit.sandbox.spec import TestRunSpec


def test_absent_id_counts_as_failed():
    g = grade({"a": "passed"}, ["a", "b"], [])
    assert g.fail_to_pass == {"a": "passed", "b": "failed"} and g.resolved is False


def test_skipped_is_not_passed():
    assert grade({"a": "passed", "p": "skipped"}, ["a"], ["p"]).resolved is False


@pytest.mark.parametrize("policy, resolved", [("fail", False), ("pass", True), ("exclude", True)])
def test_flaky_pass_to_pass_by_policy(policy, resolved):
    assert grade({"a": "passed", "p": "flaky"}, ["a"], ["p"], policy).resolved is resolved


def test_all_fail_to_pass_excluded_is_not_resolved():
    g = grade({"a": "flaky"}, ["a"], [], "exclude")
    assert g.resolved is False and "excluded" in g.notes[0]


def test_rerun_flip_makes_flaky_and_keeps_failures():
    tests, still = merge_rerun({"a": "failed", "b": "failed"}, {"a": "passed", "b": "failed"}, ["a", "b"])
    assert tests == {"a": "flaky", "b": "failed"} and still == ["b"]


def test_markers_need_the_phase_nonce():
    ph = PhaseOutcome("main", "n0nce", "exited", 0,
                      files={"status": b"n0nce 0\n", "method": b"guess git apply\n"})
    assert ph.marker("status") == "0"
    assert ph.marker("method") is None and ph.tampered("method")
    assert ph.marker("absent") is None and not ph.tampered("absent")


def _spec(**kw) -> TestRunSpec:
    return TestRunSpec(image="i", tree="/t", test_command="pytest tests", fail_to_pass=["x"], **kw)


def test_runner_script_cleans_and_collects_junit_and_keeps_no_nonce():
    script = runner_script(_spec(junit_paths=["target/surefire-reports/TEST-*.xml", "report.xml"]))
    assert "find target/surefire-reports -maxdepth 1 -type f -name 'TEST-*.xml' -exec rm -f {} +" in script
    assert '-exec cp {} "$OUT/junit/1/"' in script
    assert 'rm -f "$CTL/secret/nonce"' in script
    assert script.index('rm -f "$CTL/secret/nonce"') < script.index("running:")
    for method in ("git apply --3way", "git apply --reject", "patch --fuzz=3"):
        assert f'"{method}"' in script


@pytest.mark.parametrize("bad", ["/abs/report.xml", "../up.xml", "reports-*/x.xml"])
def test_junit_paths_must_be_relative_with_globs_in_names_only(bad):
    with pytest.raises(ValueError):
        split_junit_path(bad)


def test_rerun_command_quotes_ids():
    cmd = rerun_command(_spec(), ["tests/a.py::t[x y]", "tests/b.py::u"])
    assert cmd == "pytest tests 'tests/a.py::t[x y]' tests/b.py::u"


def test_tree_digest_follows_content_and_ignores_git(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: main\n")
    first = tree_digest(tmp_path)
    (tmp_path / ".git" / "HEAD").write_text("ref: other\n")
    assert tree_digest(tmp_path) == first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert tree_digest(tmp_path) != first


def test_tar_members_owned_by_sandbox_user_without_git(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / ".git").mkdir()
    tar = TarBuilder()
    tar.add_tree(tmp_path, "work/tree")
    tar.add_bytes("work/ctl/run.sh", b"#!/bin/sh\n", 0o755, uid=0)
    members = {m.name: m for m in tarfile.open(fileobj=io.BytesIO(tar.getvalue()))}
    assert set(members) == {"work/tree", "work/tree/pkg", "work/tree/pkg/m.py", "work/ctl/run.sh"}
    assert members["work/tree/pkg/m.py"].uid == 1000 and members["work/ctl/run.sh"].uid == 0


def test_capped_tar_read_stops_early():
    tar = TarBuilder()
    tar.add_bytes("out/small", b"ok")
    tar.add_bytes("out/huge", b"x" * 5_000_000)
    data = tar.getvalue()
    chunks = (data[i:i + 65536] for i in range(0, len(data), 65536))
    files, capped = read_tar_files(chunks, 1_000_000, strip="out/")
    assert files == {"small": b"ok"} and capped is True


def test_ids_swebench_cut_at_the_first_space_match_the_full_parametrised_ids():
    from evalkit.sandbox.grading import grade

    tests = {"tests/t.py::test_fail[custom-Custom error message.]": "passed",
             "tests/t.py::test_fail[custom-Custom other words]": "passed",
             "tests/t.py::test_ok": "passed", "tests/t.py::test_bad[x y]": "failed"}
    g = grade(tests, ["tests/t.py::test_ok"], ["tests/t.py::test_fail[custom-Custom", "tests/t.py::test_bad[x"])
    assert g.pass_to_pass == {"tests/t.py::test_fail[custom-Custom": "passed", "tests/t.py::test_bad[x": "failed"}
    assert not g.resolved and not g.notes  # nothing absent: the cut ids were found
    # an id that is not cut (closed bracket, or no bracket) must match exactly
    assert grade(tests, ["tests/t.py::test_o"], []).fail_to_pass == {"tests/t.py::test_o": "failed"}
    assert grade(tests, ["tests/t.py::test_fail[custom-Custom error]"], []).fail_to_pass[
        "tests/t.py::test_fail[custom-Custom error]"] == "failed"
