"""Host-side safety checks of a unified diff, done before any sandbox starts.

A patch is refused when it is not text (not UTF-8, NUL bytes), has no diff headers, touches a
path outside the tree (absolute, ``..``), inside a ``.git`` folder, creates a symbolic link or a
submodule (any file mode but a regular file's, in every spelling git accepts: ``0120000`` too), or
carries a compiled file (``*.pyc``, ``__pycache__/``, ``*.so``...) or any git binary patch: nobody
reading the diff could tell what such a file does, and Python would import a ``.pyc`` unchecked.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from evalkit.sandbox import guards

_DIFF_GIT = re.compile(r"^diff --git (?P<a>\S+) (?P<b>\S+)\s*$")
_OLD = re.compile(r"^--- (?P<path>.+?)(?:\t.*)?$")
_NEW = re.compile(r"^\+\+\+ (?P<path>.+?)(?:\t.*)?$")
_RENAME_COPY = re.compile(r"^(?:rename|copy) (?:from|to) (?P<path>.+)$")
_MODE_LINE = re.compile(r"^(?:new file mode|new mode|deleted file mode|old mode) (?P<mode>\S+)\s*$")
_INDEX_MODE = re.compile(r"^index [0-9a-fA-F]+\.\.[0-9a-fA-F]+ (?P<mode>\S+)\s*$")
#: Suffixes and folder names of compiled files a patch may not add or change.
COMPILED_SUFFIXES = (".pyc", ".pyo", ".so", ".pyd", ".dll", ".dylib", ".o", ".a")
COMPILED_DIRS = ("__pycache__",)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")


class PatchRejected(ValueError):
    """The patch is unsafe or not a diff; the message says why in plain words."""


@dataclass(frozen=True)
class PatchInfo:
    """What a diff touches: tree-relative paths, old side and new side."""

    old_paths: tuple[str, ...]
    new_paths: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.old_paths) | set(self.new_paths)))


def _unquote(path: str) -> str:
    path = path.strip()
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        try:
            path = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        except UnicodeDecodeError as exc:
            raise PatchRejected(f"patch names a path with a broken escape: {path!r} ({exc.reason})") from None
    return path


def _strip_prefix(path: str) -> str:
    """Drop the ``a/``/``b/`` component the way ``-p1`` does."""
    return path.split("/", 1)[1] if "/" in path else path


def check_path(raw: str, *, strip: bool) -> str | None:
    """The tree-relative path of one header path, or None for /dev/null; raises when unsafe."""
    path = _unquote(raw)
    if path == "/dev/null":
        return None
    if path.startswith("/") or path.startswith("\\") or re.match(r"^[A-Za-z]:", path):
        raise PatchRejected(f"patch touches an absolute path: {path!r}")
    parts = path.replace("\\", "/").split("/")
    if ".." in parts:
        raise PatchRejected(f"patch touches a path outside the tree: {path!r}")
    rel = _strip_prefix(path) if strip else path
    rel_parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not rel_parts:
        raise PatchRejected(f"patch touches an empty path: {path!r}")
    if any(p.lower() == ".git" for p in parts):
        raise PatchRejected(f"patch touches the .git folder: {path!r}")
    return "/".join(rel_parts)


def _check_mode(raw: str) -> None:
    """Refuse a mode that is not a regular file's (symbolic link 120000, gitlink 160000), however spelled."""
    try:
        mode = int(raw, 8)
    except ValueError:
        raise PatchRejected(f"patch names an unreadable file mode {raw!r}") from None
    kind = mode & 0o170000
    if kind == 0o120000:
        raise PatchRejected("patch creates or changes a symbolic link, which is not allowed")
    if kind not in (0o100000, 0):
        raise PatchRejected(f"patch sets file mode {raw} (not a regular file), which is not allowed")


def check_compiled(path: str) -> None:
    """Refuse a compiled file (a .pyc Python would import unchecked, a shared library)."""
    parts = path.split("/")
    if any(p in COMPILED_DIRS for p in parts) or parts[-1].lower().endswith(COMPILED_SUFFIXES):
        raise PatchRejected(f"patch adds or changes a compiled file ({path}), which is not allowed")


def check_patch(patch: str | bytes) -> PatchInfo:
    """Validate a unified diff; return the paths it touches or raise PatchRejected."""
    if isinstance(patch, bytes):
        if b"\x00" in patch:
            raise PatchRejected("patch contains NUL bytes: binary garbage, not a diff")
        try:
            text = patch.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PatchRejected(f"patch is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    else:
        text = patch
        if "\x00" in text:
            raise PatchRejected("patch contains NUL bytes: binary garbage, not a diff")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise PatchRejected("patch is not UTF-8 text (undecodable characters)") from None
    if not text.strip():
        raise PatchRejected("patch is empty")

    old: list[str] = []
    new: list[str] = []
    has_git_header = has_old = has_new = has_hunk = False
    for line in text.splitlines():
        if m := _DIFF_GIT.match(line):
            has_git_header = True
            for side, target in (("a", old), ("b", new)):
                p = check_path(m.group(side), strip=True)
                if p is not None:
                    target.append(p)
        elif line.startswith("--- ") and (m := _OLD.match(line)):
            has_old = True
            if (p := check_path(m.group("path"), strip=True)) is not None:
                old.append(p)
        elif line.startswith("+++ ") and (m := _NEW.match(line)):
            has_new = True
            if (p := check_path(m.group("path"), strip=True)) is not None:
                new.append(p)
        elif m := _RENAME_COPY.match(line):
            p = check_path(m.group("path"), strip=False)
            if p is not None:
                (old if " from " in line else new).append(p)
        elif (m := _MODE_LINE.match(line)) or (m := _INDEX_MODE.match(line)):
            if guards.on("patch_safety"):
                _check_mode(m.group("mode"))
            elif m.group("mode") == "120000":  # the old check, which a leading zero got past
                raise PatchRejected("patch creates or changes a symbolic link, which is not allowed")
        elif line.startswith(("GIT binary patch", "Binary files ")) and guards.on("patch_safety"):
            raise PatchRejected("patch carries a binary file (git binary patch), which is not allowed")
        elif _HUNK.match(line):
            has_hunk = True
    if not (has_git_header or (has_old and has_new and has_hunk)):
        raise PatchRejected("no diff headers found: not a unified diff")
    if not old and not new:
        raise PatchRejected("patch names no file to change")
    for path in (*old, *new) if guards.on("patch_safety") else ():
        check_compiled(path)
    return PatchInfo(tuple(dict.fromkeys(old)), tuple(dict.fromkeys(new)))


def git_apply_check(folder: Path, patch: str) -> str | None:
    """None when `git apply --check` accepts the patch in the folder, else git's complaint."""
    # Ceiling: a folder inside some other work tree must not make git apply paths relative to that repo.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(folder.parent)}
    proc = subprocess.run(["git", "apply", "--check", "-"], cwd=folder, input=patch, text=True,
                          capture_output=True, env=env)
    if proc.returncode == 0:
        return None
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")] or proc.stderr.splitlines()
    return "; ".join(errors[:3])[:300] or f"git apply exited {proc.returncode}"
