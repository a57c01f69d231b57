"""SWE-bench task instances (JSON list or JSONL) -> an evalkit `patch` suite.

One row becomes `<suite>/<instance_id>/case.yaml` with `test_patch.patch` and `gold.patch` beside
it. The source tree is `inputs.repo` at `inputs.base_commit`: the row's GitHub repository mapped
to a local clone or a URL the execute stage can `git clone` (there is no implicit github.com).

Where no clone can be had, `--tree INSTANCE_ID=DIR` takes a plain folder (e.g. the unpacked PyPI
sdist of the release the base commit came just after) as that row's tree: it is copied into the
case as `tree/` (`inputs.source_dir`). Nothing can show the folder is the base commit, so such a
case says so in its description and carries the tag `unverified-tree`; the import only checks that
the gold patch and the test patch apply to the folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import LiteralScalarString

from evalkit.casemodels import CASE_ID
from evalkit.errors import InputError, Problem
from evalkit.fsutil import atomic_write_text, confine_writes, ensure_dir, guarded

REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
DEFAULT_TEST_COMMAND = "python3 -m pytest -rA -p no:cacheprovider"
#: Files a test patch touches that are data, not tests to run (as in SWE-bench's test directives).
NON_TEST_EXTS = (".json", ".png", ".csv", ".txt", ".md", ".rst", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml",
                 ".toml", ".cfg", ".ini", ".dcm", ".gz")
_PLUS_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
#: Folder (inside the case) a `--tree` folder is copied to, and the tag such a case carries.
TREE_DIR = "tree"
UNVERIFIED_TAG = "unverified-tree"


@dataclass
class Row:
    """One validated SWE-bench row and where it came from."""

    line: int | None
    instance_id: str
    repo: str
    base_commit: str
    patch: str
    test_patch: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    problem_statement: str = ""
    version: str = ""


@dataclass
class ImportResult:
    """What an import wrote and what it left out."""

    written: list[str] = field(default_factory=list)
    """Case ids written."""
    skipped: dict[str, list[str]] = field(default_factory=dict)
    """SWE-bench repo without a --repo mapping -> instance ids left out."""
    unverified: list[str] = field(default_factory=list)
    """Case ids whose tree is a plain folder (--tree), not checked out at the row's base_commit."""
    warnings: list[str] = field(default_factory=list)
    """Things about written cases the user should know (e.g. test ids cut at a space)."""


def read_rows(path: Path) -> list[tuple[int | None, Any]]:
    """(line, raw row) of a JSON list (or `{id: row}` mapping) or a JSONL file; line is None for JSON."""
    shown = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(Problem(shown, None, "file not found (expected SWE-bench instances as .json or .jsonl)")) from None
    except UnicodeDecodeError as exc:
        raise InputError(Problem(shown, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})")) from None
    except OSError as exc:
        raise InputError(Problem(shown, None, f"cannot read: {exc.strerror}")) from None
    if path.suffix == ".jsonl" or (path.suffix != ".json" and not text.lstrip().startswith("[")):
        rows: list[tuple[int | None, Any]] = []
        problems = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                problems.append(Problem(shown, n, f"malformed JSON: {exc.msg} (column {exc.colno})"))
        if problems:
            raise InputError(problems)
        return rows
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(Problem(shown, exc.lineno, f"malformed JSON: {exc.msg} (column {exc.colno})")) from None
    if isinstance(loaded, dict):
        loaded = list(loaded.values())
    if not isinstance(loaded, list):
        raise InputError(Problem(shown, 1, "expected a JSON list of SWE-bench instances"))
    return [(None, r) for r in loaded]


def _test_list(value: Any) -> list[str] | None:
    """FAIL_TO_PASS / PASS_TO_PASS: a list of ids, or that list JSON-encoded in a string."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            return None
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return value
    return None


def parse_row(raw: Any, shown: str, line: int | None, index: int) -> Row:
    """Validate one raw row; raise InputError naming the file (and line, for JSONL) on a bad one."""
    where = f"row {index + 1}" + (f" ({raw.get('instance_id')})" if isinstance(raw, dict) and raw.get("instance_id") else "")
    if not isinstance(raw, dict):
        raise InputError(Problem(shown, line, f"{where}: expected a JSON object with {', '.join(REQUIRED)}"))
    missing = [k for k in REQUIRED if k not in raw]
    if missing:
        raise InputError(Problem(shown, line, f"{where}: missing field(s) {', '.join(missing)}"))
    problems = []
    for key in ("instance_id", "repo", "base_commit", "patch", "test_patch"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            problems.append(f"{key} must be a non-empty string")
    lists = {}
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        lists[key] = _test_list(raw[key])
        if lists[key] is None:
            problems.append(f"{key} must be a list of test ids (or that list as a JSON string)")
    iid = raw["instance_id"]
    if isinstance(iid, str) and iid and (not re.match(CASE_ID, iid) or len(iid) > 120):
        problems.append(f"instance_id {iid!r} cannot be a case id (must match {CASE_ID}, at most 120 characters)")
    if lists.get("FAIL_TO_PASS") == []:
        problems.append("FAIL_TO_PASS is empty: nothing would show the fix works")
    if problems:
        raise InputError([Problem(shown, line, f"{where}: {p}") for p in problems])
    ps = raw.get("problem_statement")
    return Row(line=line, instance_id=iid, repo=raw["repo"], base_commit=raw["base_commit"].strip(),
               patch=raw["patch"], test_patch=raw["test_patch"], fail_to_pass=lists["FAIL_TO_PASS"],
               pass_to_pass=lists["PASS_TO_PASS"], problem_statement=ps if isinstance(ps, str) else "",
               version=str(raw.get("version") or ""))


def load_rows(path: Path) -> list[Row]:
    """Every row of a SWE-bench instances file, validated; all problems are reported at once."""
    shown = str(path)
    rows, problems, seen = [], [], {}
    for index, (line, raw) in enumerate(read_rows(path)):
        try:
            row = parse_row(raw, shown, line, index)
        except InputError as exc:
            problems.extend(exc.problems)
            continue
        if row.instance_id in seen:
            problems.append(Problem(shown, line, f"duplicate instance_id {row.instance_id!r} (also row {seen[row.instance_id]})"))
            continue
        seen[row.instance_id] = index + 1
        rows.append(row)
    if problems:
        raise InputError(problems)
    return rows


def touched_test_files(test_patch: str) -> list[str]:
    """Files the test patch adds or changes that hold tests (deleted files and data files left out)."""
    out: list[str] = []
    for path in _PLUS_FILE.findall(test_patch):
        if path == "/dev/null" or path.endswith(NON_TEST_EXTS) or path in out:
            continue
        out.append(path)
    return out


def command_for(row: Row, prefix: str = DEFAULT_TEST_COMMAND) -> str:
    """The runner followed by the test files the test patch touches (as SWE-bench's harness runs them)."""
    return " ".join([prefix, *(shlex.quote(f) for f in touched_test_files(row.test_patch))])


def cut_test_ids(row: Row) -> list[str]:
    """Test ids that look cut at a space: SWE-bench's log parser splits `PASSED <id>` at whitespace, so a
    parametrized id such as `test_fail[custom-Custom error message.]` is stored as `test_fail[custom-Custom`."""
    return [t for t in row.fail_to_pass + row.pass_to_pass if "[" in t and not t.endswith("]")]


def parse_repo_map(specs: list[str]) -> dict[str, str]:
    """`OWNER/NAME=PATH_OR_URL` options -> {OWNER/NAME: local absolute path or URL}."""
    out = {}
    problems = []
    for spec in specs:
        name, sep, target = spec.partition("=")
        if not sep or not name.strip() or not target.strip() or "/" not in name:
            problems.append(Problem("--repo", None, f"{spec!r}: expected OWNER/NAME=PATH_OR_URL"))
            continue
        target = target.strip()
        if not re.match(r"^(https?://|git@|ssh://|file://)", target):
            p = Path(target).expanduser()
            if not p.exists():
                problems.append(Problem("--repo", None, f"{spec!r}: local path {target!r} does not exist"))
                continue
            target = str(p.resolve())
        out[name.strip()] = target
    if problems:
        raise InputError(problems)
    return out


def parse_tree_map(specs: list[str]) -> dict[str, Path]:
    """`INSTANCE_ID=DIR` options -> {instance_id: absolute folder}."""
    out: dict[str, Path] = {}
    problems = []
    for spec in specs:
        iid, sep, target = spec.partition("=")
        iid, target = iid.strip(), target.strip()
        if not sep or not iid or not target:
            problems.append(Problem("--tree", None, f"{spec!r}: expected INSTANCE_ID=DIR"))
            continue
        p = Path(target).expanduser()
        if not p.is_dir():
            problems.append(Problem("--tree", None, f"{spec!r}: {target!r} is not a folder"))
            continue
        if iid in out:
            problems.append(Problem("--tree", None, f"{spec!r}: a second folder for {iid}"))
            continue
        out[iid] = p.resolve()
    if problems:
        raise InputError(problems)
    return out


def _apply_check(folder: Path, patch: str) -> str | None:
    """None when `git apply --check` accepts the patch in the folder, else git's complaint."""
    # Ceiling: a folder inside some other work tree must not make git apply paths relative to that repo.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(folder.parent)}
    proc = subprocess.run(["git", "apply", "--check", "-"], cwd=folder, input=patch, text=True,
                          capture_output=True, env=env)
    if proc.returncode == 0:
        return None
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")] or proc.stderr.splitlines()
    return "; ".join(errors[:3])[:300] or f"git apply exited {proc.returncode}"


def check_trees(rows: list[Row], trees: dict[str, Path], source: Path) -> list[Problem]:
    """Every --tree must name a row, and the row's gold and test patches must apply to its folder."""
    by_id = {r.instance_id: r for r in rows}
    problems = []
    for iid, folder in trees.items():
        row = by_id.get(iid)
        if row is None:
            problems.append(Problem("--tree", None, f"{iid}: no row with that instance_id in {source}"))
            continue
        for what, patch in (("gold patch", row.patch), ("test patch", row.test_patch)):
            err = _apply_check(folder, patch)
            if err:
                problems.append(Problem("--tree", None, f"{iid}: the {what} does not apply to {folder} "
                                                         f"(so it is not the tree at base_commit {row.base_commit[:12]}): {err}"))
    return problems


def _copy_tree(folder: Path, dest: Path) -> None:
    """The folder's files as the case's tree (a git repo's .git is left out; the sandbox makes its own)."""
    if dest.exists():
        shutil.rmtree(guarded(dest))
    shutil.copytree(folder, guarded(dest), symlinks=True, ignore=shutil.ignore_patterns(".git"))


def _dump_yaml(data: dict[str, Any]) -> str:
    y = YAML(typ="rt", pure=True)
    y.width = 4096
    y.default_flow_style = False
    buf = StringIO()
    y.dump(data, buf)
    return buf.getvalue()


def normalize_text(text: str) -> str:
    """A problem statement as the case file holds it: LF line ends, one final newline when multi-line."""
    clean = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return clean + "\n" if "\n" in clean else clean


def _literal(text: str) -> Any:
    # Issue texts come with CRLF line ends; block style keeps the rest as written.
    clean = normalize_text(text)
    return LiteralScalarString(clean) if "\n" in clean.rstrip("\n") else clean


def case_yaml(row: Row, repo: str | None, *, image: str | None, test_prefix: str | None,
              tree_from: str | None = None) -> str:
    """The case file; `tree_from` names the plain folder a --tree case's `tree/` was copied from."""
    inputs: dict[str, Any] = ({"source_dir": TREE_DIR, "base_commit": row.base_commit} if tree_from is not None
                              else {"repo": repo, "base_commit": row.base_commit})
    if row.problem_statement:
        inputs["problem_statement"] = _literal(row.problem_statement)
    inputs["test_patch_file"] = "test_patch.patch"
    inputs["test_command"] = command_for(row, test_prefix or DEFAULT_TEST_COMMAND)
    if image:
        inputs["image"] = image
    first = row.problem_statement.strip().splitlines()[0][:200] if row.problem_statement.strip() else ""
    description = row.repo + (f": {first}" if first else "")
    tags = [row.repo.split("/")[-1]] + ([f"v{row.version}"] if row.version else [])
    header = f"# Imported from SWE-bench instance {row.instance_id} by `evalkit import swebench`.\n"
    if tree_from is not None:
        note = (f"The source tree is the plain folder {tree_from}, standing in for base_commit "
                f"{row.base_commit[:12]}; it was not verified to be that commit (only that the gold and test "
                "patches apply to it).")
        description += f" (tree: folder {tree_from}, not verified to be base_commit {row.base_commit[:12]})"
        tags.append(UNVERIFIED_TAG)
        header += f"# {note}\n"
    data = {
        "id": row.instance_id,
        "description": description,
        "tags": tags,
        "inputs": inputs,
        "reference": {"patch_file": "gold.patch", "fail_to_pass": row.fail_to_pass, "pass_to_pass": row.pass_to_pass},
    }
    return header + _dump_yaml(data)


def suite_yaml(source: Path, image: str | None) -> str:
    data: dict[str, Any] = {
        "kind": "patch",
        "language": "python",
        "description": f"SWE-bench instances imported from {source.name}: each case's gold patch must make its "
                       "FAIL_TO_PASS tests pass and keep its PASS_TO_PASS tests passing.",
    }
    if image:
        data["defaults"] = {"image": image}
    return "# Written by `evalkit import swebench`.\n" + _dump_yaml(data)


def import_swebench(source: Path, repos: dict[str, str], suite_dir: Path, *, image: str | None = None,
                    test_command: str | None = None, trees: dict[str, Path] | None = None) -> ImportResult:
    """Write a patch suite for every row whose repo is mapped or that has a --tree folder.

    Nothing is written when any row is bad or any --tree folder does not take the row's patches.
    A row with a --tree folder uses it even when its repo is mapped too.
    """
    rows = load_rows(source)
    trees = trees or {}
    problems = check_trees(rows, trees, source)
    if problems:
        raise InputError(problems)
    result = ImportResult()
    confine_writes(suite_dir)  # every file this import writes lands below the suite folder it was given
    ensure_dir(suite_dir)
    atomic_write_text(suite_dir / "suite.yaml", suite_yaml(source, image))
    for row in rows:
        folder = trees.get(row.instance_id)
        target = repos.get(row.repo)
        if target is None and folder is None:
            result.skipped.setdefault(row.repo, []).append(row.instance_id)
            continue
        case_dir = suite_dir / row.instance_id
        ensure_dir(case_dir)
        atomic_write_text(case_dir / "gold.patch", row.patch)
        atomic_write_text(case_dir / "test_patch.patch", row.test_patch)
        if folder is not None:
            _copy_tree(folder, case_dir / TREE_DIR)
            result.unverified.append(row.instance_id)
        atomic_write_text(case_dir / "case.yaml", case_yaml(row, target, image=None, test_prefix=test_command,
                                                           tree_from=folder.name if folder is not None else None))
        result.written.append(row.instance_id)
        cut = cut_test_ids(row)
        if cut:
            result.warnings.append(
                f"{row.instance_id}: {len(cut)} test id(s) look cut at a space (SWE-bench's log parser splits at "
                f"whitespace), e.g. {cut[0]!r}; evalkit matches whole pytest ids, so these count as absent and "
                "even the gold patch does not resolve the case")
    return result
