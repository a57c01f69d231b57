"""What a system's patch may not decide: the tests, and how they are collected, run and reported.

Two rules, both decided on the host before any sandbox starts:

1. **Test files are evalkit's.** Every file the patch touches under the suite's test paths
   (default :data:`DEFAULT_TEST_PATHS`: any ``tests/`` folder, ``test_*.py``, ``*_test.py``,
   ``conftest.py`` and every pytest/tox/setup configuration file, in any folder), the test patch's
   files and the FAIL_TO_PASS/PASS_TO_PASS files are put back to base (and the test patch applied)
   after the system patch, whatever it did: a new test module that patches ``_pytest`` when it is
   imported is removed before pytest starts. This holds under both ``test_changes`` policies.
2. **Test infrastructure is reported** (:func:`findings`) and, per the suite's ``test_changes``,
   refused (``tampered_with_tests``) or reverted: ``conftest.py``, ``pytest.ini``, ``.pytest.ini``,
   ``tox.ini``, ``pytest.toml``, ``.pytest.toml`` (the whole file); a ``setup.cfg`` or
   ``pyproject.toml`` whose pytest/tox settings differ once both versions are parsed (configparser,
   tomllib: inline tables, escaped or quoted keys read as pytest reads them); ``sitecustomize.py``,
   ``usercustomize.py``, ``*.pth`` (code Python runs at start-up); a plugin (a ``pytest_*`` file or
   folder, package metadata, ``.pytest_cache``); and Python code outside pytest's own source whose
   syntax tree binds ``pytest_plugins``, defines a module-level ``pytest_<hook>``, names
   ``hookimpl``/``pluginmanager`` or imports ``_pytest``.

What a hostile patch can still do from code under test (patch pytest at import through a name
no rule can see) is caught at run time by evalkit's own pytest plugin (``evalkit.sandbox.sentinel``).
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalkit import pyast
from evalkit.sandbox import guards
from evalkit.sandbox.patchcheck import check_path

#: Where a suite's tests live unless it says otherwise: ``name/`` is a folder of that name at any
#: depth, a pattern without ``/`` matches file names, one with ``/`` the whole path (fnmatch).
DEFAULT_TEST_PATHS = ("tests/", "test_*.py", "*_test.py", "conftest.py", "pytest.ini", ".pytest.ini", "tox.ini",
                      "setup.cfg", "pyproject.toml", "pytest.toml", ".pytest.toml")

_WHOLE_FILES = {
    "conftest.py": "a conftest.py (pytest loads its hooks and fixtures)",
    "pytest.ini": "pytest's configuration file",
    ".pytest.ini": "pytest's configuration file",
    "pytest.toml": "pytest's configuration file",
    ".pytest.toml": "pytest's configuration file",
    "tox.ini": "tox and pytest configuration file",
    "sitecustomize.py": "Python runs sitecustomize at start-up",
    "usercustomize.py": "Python runs usercustomize at start-up",
}
_SECTION_FILES = ("setup.cfg", "pyproject.toml")
#: Modules pytest (any version) imports before its -p plugins: a tree module of such a name at the top
#: of the tree would run before evalkit's pytest plugin (``python -m`` puts the tree first on sys.path).
PYTEST_STARTUP = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup", "tomli",
                            "colorama", "attr", "attrs", "more_itertools", "atomicwrites", "six", "importlib_metadata",
                            "zipp", "typing_extensions", "pygments", "wcwidth", "evalkit_sentinel"})
_PYTEST_OWN = {"_pytest", "pytest"}
_PLUGIN_NAMES = {"hookimpl", "pluginmanager", "hookspec", "PytestPluginManager"}


def is_test_path(path: str, patterns: tuple[str, ...] | list[str] = DEFAULT_TEST_PATHS) -> bool:
    """Whether ``path`` (tree-relative, ``/``-separated) lies under the test paths ``patterns``."""
    parts = PurePosixPath(path).parts
    for pattern in patterns:
        if pattern.endswith("/"):
            if pattern[:-1] in parts[:-1]:
                return True
        elif "/" in pattern:
            if fnmatch.fnmatchcase(path, pattern):
                return True
        elif parts and fnmatch.fnmatchcase(parts[-1], pattern):
            return True
    return False


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


def _read_base(tree: str | None, path: str | None) -> list[str] | None:
    """The base version's lines (None: unknown, no host copy of the tree); [] when the base has no such file."""
    if tree is None:
        return None
    if path is None:
        return []
    try:
        return (Path(tree) / path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def post_image(base: list[str] | None, fd: FileDiff) -> list[str] | None:
    """The file's lines after the patch (hunks applied strictly at their line numbers); None when it
    cannot be told (no base known for a changed file, or a hunk that does not match the base)."""
    if fd.new is None:
        return []
    if fd.old is None:
        base = []
    if base is None:
        return None
    out: list[str] = []
    pos = 0
    for h in fd.hunks:
        old = [line[1:] for line in h.lines if line[0] in " -"]
        new = [line[1:] for line in h.lines if line[0] in " +"]
        start = h.old_start - 1 if old else h.old_start
        if start < pos or base[start:start + len(old)] != old:
            return None
        out += base[pos:start] + new
        pos = start + len(old)
    return out + base[pos:]


def _toml_settings(text: str) -> Any:
    data = tomllib.loads(text)
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    entry = project.get("entry-points", {}) if isinstance(project.get("entry-points"), dict) else {}
    out: dict[str, Any] = {}
    for name, value in (("tool.pytest", tool.get("pytest")), ("tool.tox", tool.get("tox")),
                        ("project.entry-points.pytest11", entry.get("pytest11")), ("pytest", data.get("pytest"))):
        if isinstance(value, dict) and name != "project.entry-points.pytest11":
            for key, sub in value.items():
                out[f"{name}.{key}" if isinstance(sub, dict) else name] = sub if isinstance(sub, dict) else value
        elif value is not None:
            out[name] = value
    return out


def _ini_settings(text: str) -> Any:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment, method-assign]
    parser.read_string(text)
    out: dict[str, dict[str, str] | str] = {}
    for section in parser.sections():
        name = section.strip().lower()
        if name in ("pytest", "tool:pytest", "tox", "tox:tox") or name.startswith(("testenv", "tox:", "tool:pytest")):
            out[section] = dict(parser.items(section, raw=True))
        elif name == "options.entry_points" and parser.has_option(section, "pytest11"):
            out[section] = parser.get(section, "pytest11", raw=True)
    return out


def test_settings(name: str, lines: list[str] | None) -> object:
    """The pytest/tox settings of a setup.cfg or pyproject.toml as its parser reads them
    (``("unreadable", text)`` when it does not parse: such a file counts as changed)."""
    if lines is None:
        return None
    text = "\n".join(lines) + "\n"
    try:
        return _toml_settings(text) if name.endswith(".toml") else _ini_settings(text)
    except (tomllib.TOMLDecodeError, configparser.Error, ValueError, TypeError):
        return ("unreadable", text)


def _settings_change(before: Any, after: Any) -> str:
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        return f"changes its test settings ({', '.join(f'[{k}]' for k in keys)})"
    if after == ("unknown",):
        return "changes it in a way that cannot be compared with the base"
    return "changes its test settings (a version that does not parse)"


def _plugin_code(source: str) -> str | None:
    """What in Python ``source`` registers a pytest plugin, implements a hook or reaches pytest's internals."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("pytest_"):
            return f"defines the hook {stmt.name}()"
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = [node.target]
        for t in targets:
            if isinstance(t, ast.Name) and t.id == "pytest_plugins":
                return "sets pytest_plugins"
        if isinstance(node, ast.Global) and "pytest_plugins" in node.names:
            return "sets pytest_plugins"
        if isinstance(node, ast.Attribute) and node.attr in _PLUGIN_NAMES:
            return f"uses pytest's {node.attr}"
        if isinstance(node, ast.Name) and node.id in _PLUGIN_NAMES:
            return f"uses pytest's {node.id}"
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "_pytest" for a in node.names):
            return "imports pytest's internals (_pytest)"
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "_pytest":
            return "imports pytest's internals (_pytest)"
    return None


def _shadows(path: str, added: bool) -> str | None:
    """A top-level module of the tree named like one Python or pytest imports at start-up."""
    parts = PurePosixPath(path).parts
    top = parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0] if len(parts) > 1 else None
    if top is None or not (top in PYTEST_STARTUP or added and top in sys.stdlib_module_names):
        return None
    return f"shadows the module {top}, which Python or pytest imports before any test"


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
    """Test-infrastructure files ``patch`` changes (``tree``: host copy of the base, to compare parsed settings).

    ``exempt``: paths left out (the test patch's files, which the runner restores anyway).
    """
    found: dict[str, Finding] = {}
    skip = set(exempt)
    for fd in split_patch(patch):
        base = _read_base(tree, fd.old)
        after: list[str] | None | bool = False  # computed once, when needed
        for path in fd.paths:
            if path in skip or path in found:
                continue
            why = _by_name(path) or _shadows(path, fd.old is None or path != fd.old)
            name = PurePosixPath(path).name
            if why is None and name in _SECTION_FILES:
                after = post_image(base, fd) if after is False else after
                if base is None and fd.old is not None:
                    continue  # no host copy (the tree is in an image): restored in the sandbox regardless
                before_s = test_settings(name, base if fd.old else [])
                after_s = test_settings(name, after) if isinstance(after, list) else ("unknown",)
                if before_s != after_s:
                    why = _settings_change(before_s, after_s)
            if why is None and name.endswith(".py") and not _PYTEST_OWN & set(PurePosixPath(path).parts[:-1]):
                after = post_image(base, fd) if after is False else after
                if isinstance(after, list):
                    source = "\n".join(after)
                else:  # base unknown: what the hunks add, as far as it parses
                    source = "\n".join(line.lstrip() for line in fd.added())
                hit = _plugin_code(source)
                if hit is not None:
                    why = f"registers a pytest plugin or reaches into pytest ({hit})"
            if why is not None:
                found[path] = Finding(path, why)
    return list(found.values())


def describe(found: list[Finding], limit: int = 5) -> str:
    """``a: why; b: why (and N more)`` for a reason text."""
    shown = "; ".join(map(str, found[:limit]))
    return shown + (f" (and {len(found) - limit} more)" if len(found) > limit else "")


@dataclass(frozen=True)
class Screening:
    """What the ``test_changes`` policy makes of a patch: refuse it, or run with some files restored."""

    found: list[Finding]
    refused: bool
    revert: tuple[str, ...]
    """Paths the runner restores to base before the test patch: test files, reverted infrastructure."""
    note: str
    """The reason text: why it was refused, or what was reverted / replaced (empty when nothing)."""

    @property
    def listed(self) -> list[str]:
        return [str(f) for f in self.found]


def test_files(ids: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The files of FAIL_TO_PASS/PASS_TO_PASS ids (``tests/x.py::t`` -> ``tests/x.py``; other ids: none)."""
    out = []
    for test_id in ids:
        path = test_id.split("::", 1)[0]
        if "::" in test_id and path.endswith(".py"):
            try:
                rel = check_path(path, strip=False)
            except ValueError:
                continue
            if rel:
                out.append(rel)
    return tuple(dict.fromkeys(out))


def screen(patch: str | None, policy: str, tree: str | None, patch_paths: tuple[str, ...],
           test_patch_paths: tuple[str, ...], test_paths: tuple[str, ...] = DEFAULT_TEST_PATHS,
           case_test_files: tuple[str, ...] = ()) -> Screening:
    """Apply the suite's ``test_changes`` policy (``refuse`` or ``revert``) to a checked patch; whatever the
    policy, files under ``test_paths`` and ``case_test_files`` (the F2P/P2P files) go back to base."""
    if patch is None:
        return Screening([], False, (), "")
    found = findings(patch, tree, exempt=test_patch_paths) if guards.on("infrastructure") else []
    if found and policy == "refuse":
        return Screening(found, True, (), "the patch changes test infrastructure, which this suite refuses "
                         f"(test_changes: refuse): {describe(found)}")
    overlap = sorted(set(patch_paths) & set(test_patch_paths))
    infra = [f.path for f in found]
    tests = [p for p in patch_paths if p not in overlap and p not in infra
             and (is_test_path(p, test_paths) or p in case_test_files)] if guards.on("test_files") else []
    notes = []
    if found:
        notes.append(f"test infrastructure the patch changed was reverted to base before the tests ran "
                     f"(test_changes: revert): {describe(found)}")
    if overlap:
        notes.append(f"the patch's changes to {_some(overlap)} were replaced by the test patch (applied over the "
                     "base version, as SWE-bench does)")
    if tests:
        notes.append(f"the patch's changes to test files ({_some(tests)}) were put back to base: the tests are "
                     "the case's")
    return Screening(found, False, tuple(dict.fromkeys([*infra, *tests])), "; ".join(notes))


def _some(paths: list[str], limit: int = 5) -> str:
    return ", ".join(paths[:limit]) + (f" and {len(paths) - limit} more" if len(paths) > limit else "")
