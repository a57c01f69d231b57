"""A host-side working copy of a case's source tree that a system's changes are applied to.

Nothing here runs case code: files are copied, written, diffed and patched (`git apply`, then
`patch --fuzz`), after the same safety checks the sandbox makes. Agentic and e2e suites use it to
re-check incidents on the changed tree and to carry changes from one iteration to the next; the
tests themselves still run in the sandbox, from the original tree plus `diff_against(original)`.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from evalkit import tempdirs
from evalkit.sandbox.patchcheck import PatchRejected, check_patch, check_path

SKIP_DIRS = {".git", "__pycache__", ".pytest_cache"}


class ChangeRejected(ValueError):
    """A system's change cannot be applied: unsafe path, not a diff, or it does not apply."""


def text_files(root: Path) -> dict[str, str]:
    """Every UTF-8 text file under root (relative path -> content), skipping VCS and cache folders."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.is_symlink():
                continue
            try:
                out[p.relative_to(root).as_posix()] = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
    return out


def copy_tree(src: Path, dest: Path) -> Path:
    """A copy of src at dest (without .git and caches); dest must not exist."""
    shutil.copytree(src, dest, symlinks=False, ignore=shutil.ignore_patterns(*SKIP_DIRS))
    return dest


def apply_patch(tree: Path, patch: str) -> str:
    """Apply a unified diff to tree; return the method that applied it, or raise ChangeRejected."""
    try:
        check_patch(patch)
    except PatchRejected as exc:
        raise ChangeRejected(f"patch refused: {exc}") from None
    data = patch if patch.endswith("\n") else patch + "\n"
    attempts = [("git apply", ["git", "apply", "--whitespace=nowarn", "-"]),
                ("patch --fuzz=3", ["patch", "-p1", "--fuzz=3", "--batch", "--forward", "--no-backup-if-mismatch",
                                    "-r", os.devnull])]
    errors = []
    for method, argv in attempts:
        check = subprocess.run(argv[:2] + ["--check"] + argv[2:] if method == "git apply" else argv + ["--dry-run"],
                               cwd=tree, input=data.encode(), capture_output=True)
        if check.returncode == 0:
            # the dry run is not the run: a patch that creates `x` and then `x/y` passes git's check and
            # fails when applied; that is the patch's failure, never evalkit's
            done = subprocess.run(argv, cwd=tree, input=data.encode(), capture_output=True)
            if done.returncode == 0:
                return method
            # it may have written some files before failing (git apply left `x`): no next method on this tree
            errors.append(f"{method}: {(done.stderr or done.stdout).decode(errors='replace').strip()[:200]}")
            break
        errors.append(f"{method}: {(check.stderr or check.stdout).decode(errors='replace').strip()[:200]}")
    raise ChangeRejected("patch does not apply (" + "; ".join(errors) + ")")


def write_files(tree: Path, files: dict[str, str]) -> None:
    """Write a system's changed files (path -> full content) into tree, refusing unsafe paths."""
    for raw, content in files.items():
        try:
            rel = check_path(raw, strip=False)
        except PatchRejected as exc:
            raise ChangeRejected(f"file path refused: {exc}") from None
        if rel is None:
            raise ChangeRejected(f"file path {raw!r} is not a path inside the tree")
        dest = tree / rel
        if dest.is_symlink():
            raise ChangeRejected(f"file path {raw!r} is a symbolic link in the tree")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(content, encoding="utf-8")


def apply_changes(tree: Path, patch: str | None, files: dict[str, str]) -> str | None:
    """Apply a sample's patch and/or files; return how (None when it changed nothing).

    Whatever goes wrong while applying a system's change (a file where its folder should be, a tool
    that fails) is ChangeRejected: the system's failure (``patch_failed``), never an evalkit bug."""
    how = []
    try:
        if patch and patch.strip():
            how.append(apply_patch(tree, patch))
        if files:
            write_files(tree, files)
            how.append("files")
    except ChangeRejected:
        raise
    except Exception as exc:  # noqa: BLE001 - every way a change fails to apply is the change's failure
        raise ChangeRejected(f"the change could not be applied: {type(exc).__name__}: {exc}"[:500]) from None
    return " + ".join(how) or None


def diff_trees(original: Path, changed: Path) -> str:
    """A unified diff (a/ b/ paths) from original to changed over their text files."""
    before, after = text_files(original), text_files(changed)
    chunks: list[str] = []
    for rel in sorted(set(before) | set(after)):
        a, b = before.get(rel), after.get(rel)
        if a == b:
            continue
        old_name = f"a/{rel}" if a is not None else "/dev/null"
        new_name = f"b/{rel}" if b is not None else "/dev/null"
        lines = list(difflib.unified_diff((a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
                                          old_name, new_name))
        body = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        header = f"diff --git a/{rel} b/{rel}\n"
        if a is None:
            header += "new file mode 100644\n"
        elif b is None:
            header += "deleted file mode 100644\n"
        chunks.append(header + body)
    return "".join(chunks)


class WorkTree:
    """A temporary working copy: `with WorkTree(src) as wt: apply_changes(wt.path, ...)`."""

    def __init__(self, source: Path, name: str = "tree") -> None:
        self.source = Path(source)
        self._tmp = tempfile.TemporaryDirectory(prefix=tempdirs.prefix("evalkit-worktree-"))
        self.root = Path(self._tmp.name)
        self.path = copy_tree(self.source, self.root / name)

    def diff(self) -> str:
        return diff_trees(self.source, self.path)

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> "WorkTree":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
