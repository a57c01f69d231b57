"""Host-side patch safety checks; no Docker needed."""

from __future__ import annotations

import pytest

from evalkit.sandbox.patchcheck import PatchRejected, check_patch

GOOD = """diff --git a/src/m.py b/src/m.py
index 83db48f..bf269f4 100644
--- a/src/m.py
+++ b/src/m.py
@@ -1 +1 @@
-x = 1
+x = 2
diff --git a/old.py b/new/name.py
similarity index 100%
rename from old.py
rename to new/name.py
--- /dev/null
+++ b/tests/test_new.py
@@ -0,0 +1 @@
+def test_new(): pass
"""


def test_good_patch_lists_its_paths():
    info = check_patch(GOOD)
    assert info.paths == ("new/name.py", "old.py", "src/m.py", "tests/test_new.py")


def test_plain_unified_diff_without_git_header():
    assert check_patch("--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x\n+y\n").paths == ("m.py",)


@pytest.mark.parametrize(
    "patch, words",
    [
        ("--- a/../x.py\n+++ b/../x.py\n@@ -1 +1 @@\n-a\n+b\n", "outside the tree"),
        ("--- a/src/../../x.py\n+++ b/src/../../x.py\n@@ -1 +1 @@\n-a\n+b\n", "outside the tree"),
        ("--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n", "absolute"),
        ("diff --git a/x b/x\nrename from x\nrename to ../../y\n", "outside the tree"),
        ("--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", ".git"),
        ("--- a/vendor/.git/HEAD\n+++ b/vendor/.git/HEAD\n@@ -1 +1 @@\n-a\n+b\n", ".git"),
        ("diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+/etc\n", "symbolic link"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-\xff\xfe\n+b\n", "not UTF-8"),
        ("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-\x00\n+b\n", "NUL"),
        ("hello, I fixed it!\n", "no diff headers"),
        ("   \n", "empty"),
    ],
)
def test_unsafe_or_garbage_patches_are_refused(patch, words):
    with pytest.raises(PatchRejected, match=words.replace(".", r"\.")):
        check_patch(patch)


def test_gitignore_is_not_git_folder():
    assert check_patch("--- a/.gitignore\n+++ b/.gitignore\n@@ -1 +1 @@\n-a\n+b\n").paths == (".gitignore",)
