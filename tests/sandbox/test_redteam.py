"""Red team (issue 26): a system's patch can neither rig its own verdict nor read a secret.

Every attack is a patch that does NOT fix the demo's bug (``add`` subtracts; ``test_add`` fails)
and tries to make the run ``resolved`` anyway. Each runs on both backends twice: with evalkit's
guards switched off (``evalkit.sandbox.guards.disabled``, for tests only), where it must flip the
verdict, which shows the payload works, and with them on, where it must not.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalkit.sandbox.worktree import ChangeRejected, apply_changes

X_THEN_X_Y = ("diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+a\n"
              "diff --git a/x/y b/x/y\nnew file mode 100644\n--- /dev/null\n+++ b/x/y\n@@ -0,0 +1 @@\n+b\n")


# ---- 3. a patch that cannot be applied is the system's failure, whatever raises --------------------

def test_a_patch_whose_dry_run_passes_but_apply_fails_is_rejected_not_a_crash(tmp_path: Path):
    tree = tmp_path / "t"
    tree.mkdir()
    check = subprocess.run(["git", "apply", "--check", "-"], cwd=tree, input=X_THEN_X_Y.encode(), capture_output=True)
    assert check.returncode == 0  # the dry run passes: only the real apply fails
    with pytest.raises(ChangeRejected, match="does not apply"):
        apply_changes(tree, X_THEN_X_Y, {})


def test_files_that_cannot_be_written_are_rejected_not_a_crash(tmp_path: Path):
    tree = tmp_path / "t"
    tree.mkdir()
    with pytest.raises(ChangeRejected, match="could not be applied"):
        apply_changes(tree, None, {"x": "a", "x/y": "b"})
