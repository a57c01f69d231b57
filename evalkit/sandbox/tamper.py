"""Which changes of a system's patch touch test infrastructure (decided on the host, before any sandbox).

Tests decide, not the patch: a patch may fix code, but not change how tests are collected, run or
reported. A file counts as test infrastructure when it is

* any ``conftest.py`` (pytest loads its hooks and fixtures), ``pytest.ini``, ``.pytest.ini``,
  ``tox.ini`` (the whole file), at any depth;
* a ``setup.cfg`` or ``pyproject.toml`` hunk that changes a line inside a pytest or tox section
  (``[tool:pytest]``, ``[pytest]``, ``[tox:tox]``, ``[testenv...]``, ``[tool.pytest...]``,
  ``[tool.tox...]``, ``[project.entry-points.pytest11]``...) or a line naming a pytest setting
  (``addopts``, ``pytest11``, ``testpaths``...); other changes to those files are allowed;
* ``sitecustomize.py``, ``usercustomize.py``, any ``*.pth`` (code Python runs at start-up);
* a plugin: a file or folder named ``pytest_*``, package metadata (``*.dist-info``, ``*.egg-info``:
  entry points register plugins), a ``.pytest_cache`` folder, or any Python file whose added lines
  register plugins or implement hooks (``pytest_plugins =``, ``pluginmanager``, ``hookimpl``,
  ``def pytest_<hook>(``) outside pytest's own source (``_pytest/``, ``pytest/``).

Files the case's test patch touches are not listed here: the runner always restores them to base
before applying the test patch (as SWE-bench's harness does). The runner's control folder lies
outside the tree, where no patch path can reach (``patchcheck`` refuses ``..`` and absolute paths).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from evalkit.sandbox.patchcheck import check_path

_WHOLE_FILES = {
    "conftest.py": "a conftest.py (pytest loads its hooks and fixtures)",
    "pytest.ini": "pytest's configuration file",
    ".pytest.ini": "pytest's configuration file",
    "tox.ini": "tox and pytest configuration file",
    "sitecustomize.py": "Python runs sitecustomize at start-up",
    "usercustomize.py": "Python runs usercustomize at start-up",
}
_SECTION_FILES = ("setup.cfg", "pyproject.toml")
#: Section headers of setup.cfg / pyproject.toml whose contents configure pytest or tox.
_TEST_SECTION = re.compile(
    r"^\[\s*(?:tool:pytest|pytest|tox:tox|tox|testenv[^\]]*|tool\.pytest[^\]]*|tool\.tox[^\]]*"
    r"|project\.entry-points\.\"?pytest11\"?)\s*\]", re.I)
_HEADER = re.compile(r"^\[\s*[^\]]+\]")
#: A changed line that names a pytest setting, wherever it sits in setup.cfg / pyproject.toml.
_TEST_SETTING = re.compile(
    r"addopts|pytest11|tool[.:]pytest|ini_options|python_(?:files|classes|functions)|testpaths|norecursedirs"
    r"|confcutdir|required_plugins|usefixtures|rootdir|junit_\w+|-p\s+\w", re.I)
#: Added Python lines that register pytest plugins or implement pytest hooks.
_PLUGIN_CODE = re.compile(r"^\s*pytest_plugins\s*=|pluginmanager|hookimpl|^\s*(?:async\s+)?def\s+pytest_[a-z_]+\s*\(")
_PYTEST_OWN = {"_pytest", "pytest"}

_DIFF_GIT = re.compile(r"^diff --git (\S+) (\S+)\s*$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_RENAME = re.compile(r"^(?:rename|copy) (from|to) (.+)$")


@dataclass
class Hunk:
    """One hunk: where it starts in the old file and its lines (first character ' ', '-' or '+')."""

    old_start: int
    lines: list[str] = field(default_factory=list)


@dataclass
class FileDiff:
    """The part of a patch about one file."""

    old: str | None = None
    new: str | None = None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return list(dict.fromkeys(p for p in (self.old, self.new) if p))

    def added(self) -> list[str]:
        return [line[1:] for h in self.hunks for line in h.lines if line.startswith("+")]


@dataclass(frozen=True)
class Finding:
    """One test-infrastructure file a patch changes, and why it counts."""

    path: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}: {self.why}"


def split_patch(text: str) -> list[FileDiff]:
    """The per-file parts of a unified diff (paths already checked by ``check_patch``)."""
    files: list[FileDiff] = []
    cur: FileDiff | None = None
    hunk: Hunk | None = None
    header_open = False  # inside a ``diff --git`` header, before its ``---`` line
    old_left = new_left = 0
    for line in text.splitlines():
        if hunk is not None and (old_left > 0 or new_left > 0):
            tag = line[:1] or " "
            if tag in " -+":
                hunk.lines.append(tag + line[1:])
                old_left -= tag in " -"
                new_left -= tag in " +"
                continue
        if line.startswith("\\"):
            continue
        hunk = None
        if m := _DIFF_GIT.match(line):
            cur = FileDiff(check_path(m.group(1), strip=True), check_path(m.group(2), strip=True))
            files.append(cur)
            header_open = True
        elif line.startswith("--- "):
            if cur is None or not header_open:
                cur = FileDiff()
                files.append(cur)
            cur.old, header_open = _header_path(line[4:]), False
        elif line.startswith("+++ ") and cur is not None:
            cur.new = _header_path(line[4:])
        elif (m := _RENAME.match(line)) and cur is not None:
            p = check_path(m.group(2), strip=False)
            if m.group(1) == "from":
                cur.old = p
            else:
                cur.new = p
        elif (m := _HUNK.match(line)) and cur is not None:
            hunk = Hunk(int(m.group(1)))
            cur.hunks.append(hunk)
            header_open = False
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
    return files


def _header_path(raw: str) -> str | None:
    return check_path(raw.split("\t", 1)[0], strip=True)


def _changed_sections(fd: FileDiff, base: list[str]) -> tuple[set[str], list[str]]:
    """Section headers whose contents a hunk changes, and the changed lines themselves."""
    sections: set[str] = set()
    changed: list[str] = []
    for h in fd.hunks:
        current = ""
        for line in base[: max(h.old_start - 1, 0)]:
            if _HEADER.match(line.strip()):
                current = line.strip()
        for line in h.lines:
            tag, body = line[0], line[1:]
            is_header = bool(_HEADER.match(body.strip()))
            if is_header:
                current = body.strip()
            if tag != " ":
                changed.append(body)
                if current:
                    sections.add(current)
    return sections, changed


def _read_base(tree: str | None, path: str) -> list[str]:
    if tree is None:
        return []
    try:
        return (Path(tree) / path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _by_name(path: str) -> str | None:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    if name in _WHOLE_FILES:
        return _WHOLE_FILES[name]
    if name.endswith(".pth"):
        return "a .pth file (Python runs its import lines at start-up)"
    for part in parts:
        if part.startswith("pytest_") or part.startswith("pytest-"):
            return f"named as a pytest plugin ({part})"
        if part.endswith((".dist-info", ".egg-info")):
            return "package metadata (its entry points can register pytest plugins)"
        if part == ".pytest_cache":
            return "pytest's cache folder (it steers --lf/--ff runs)"
    return None


def findings(patch: str, tree: str | None = None, exempt: tuple[str, ...] = ()) -> list[Finding]:
    """Test-infrastructure files ``patch`` changes (``tree``: host copy of the base, for section lookups).

    ``exempt``: paths left out (the test patch's files, which the runner restores anyway).
    """
    found: dict[str, Finding] = {}
    skip = set(exempt)
    for fd in split_patch(patch):
        for path in fd.paths:
            if path in skip or path in found:
                continue
            why = _by_name(path)
            name = PurePosixPath(path).name
            if why is None and name in _SECTION_FILES and fd.hunks:
                sections, changed = _changed_sections(fd, _read_base(tree, fd.old or path))
                tests = sorted(s for s in sections if _TEST_SECTION.match(s))
                if tests:
                    why = f"changes its test settings ({', '.join(tests)})"
                elif any(_TEST_SETTING.search(line) for line in changed):
                    why = "changes a pytest setting"
            if why is None and name.endswith(".py") and not _PYTEST_OWN & set(PurePosixPath(path).parts[:-1]):
                hit = next((line.strip() for line in fd.added() if _PLUGIN_CODE.search(line)), None)
                if hit is not None:
                    why = f"registers a pytest plugin or implements a pytest hook ({hit[:60]!r})"
            if why is not None:
                found[path] = Finding(path, why)
    return list(found.values())


def describe(found: list[Finding], limit: int = 5) -> str:
    """``a: why; b: why (and N more)`` for a reason text."""
    shown = "; ".join(map(str, found[:limit]))
    return shown + (f" (and {len(found) - limit} more)" if len(found) > limit else "")


@dataclass(frozen=True)
class Screening:
    """What the ``test_changes`` policy makes of a patch: refuse it, or run with some files reverted."""

    found: list[Finding]
    refused: bool
    revert: tuple[str, ...]
    """Paths the runner restores to base before the tests (revert policy)."""
    note: str
    """The reason text: why it was refused, or what was reverted / replaced (empty when nothing)."""

    @property
    def listed(self) -> list[str]:
        return [str(f) for f in self.found]


def screen(patch: str | None, policy: str, tree: str | None, patch_paths: tuple[str, ...],
           test_patch_paths: tuple[str, ...]) -> Screening:
    """Apply the suite's ``test_changes`` policy (``refuse`` or ``revert``) to a checked patch."""
    if patch is None:
        return Screening([], False, (), "")
    found = findings(patch, tree, exempt=test_patch_paths)
    overlap = sorted(set(patch_paths) & set(test_patch_paths))
    notes = []
    if found and policy == "refuse":
        return Screening(found, True, (), "the patch changes test infrastructure, which this suite refuses "
                         f"(test_changes: refuse): {describe(found)}")
    if found:
        notes.append(f"test infrastructure the patch changed was reverted to base before the tests ran "
                     f"(test_changes: revert): {describe(found)}")
    if overlap:
        notes.append(f"the patch's changes to {', '.join(overlap[:5])}{' ...' if len(overlap) > 5 else ''} "
                     "were replaced by the test patch (applied over the base version, as SWE-bench does)")
    return Screening(found, False, tuple(f.path for f in found), "; ".join(notes))
