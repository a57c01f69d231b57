"""Localization on a hand-written diff and pre-patch sources."""

from __future__ import annotations

import pytest

from evalkit.metrics.localization import (
    GoldLocations,
    gold_locations,
    hit_at_k,
    localization,
    parse_unified_diff,
    recall_at_k,
)

CALC = """\
class Calc:
    def __init__(self):
        self.total = 0

    def add(self, x):
        self.total += x
        return self.total

    def sub(self, x):
        self.total -= x
        return self.total


def helper():
    return 1
"""

UTIL = """\
import os


def read(path):
    with open(path) as fh:
        return fh.read()
"""

# Hand-made: calc.py changes line 6 (in add) and inserts after line 14 (`def helper():`);
# util.py only inserts a line after line 1 (module level); NEWS.txt is added.
PATCH = """\
diff --git a/pkg/calc.py b/pkg/calc.py
index 1111111..2222222 100644
--- a/pkg/calc.py
+++ b/pkg/calc.py
@@ -4,4 +4,4 @@ class Calc:
 
     def add(self, x):
-        self.total += x
+        self.total = self.total + x
         return self.total
@@ -14,2 +14,3 @@ class Calc:
 def helper():
+    \"\"\"Return one.\"\"\"
     return 1
diff --git a/pkg/util.py b/pkg/util.py
--- a/pkg/util.py
+++ b/pkg/util.py
@@ -1,3 +1,4 @@
 import os
+import sys
 
 
diff --git a/NEWS.txt b/NEWS.txt
new file mode 100644
--- /dev/null
+++ b/NEWS.txt
@@ -0,0 +1 @@
+fixed add
"""

SOURCES = {"pkg/calc.py": CALC, "pkg/util.py": UTIL}


def test_parse_unified_diff():
    files = parse_unified_diff(PATCH)
    assert [(f.old_path, f.new_path) for f in files] == [
        ("pkg/calc.py", "pkg/calc.py"),
        ("pkg/util.py", "pkg/util.py"),
        ("/dev/null", "NEWS.txt"),
    ]
    h1, h2 = files[0].hunks
    assert (h1.old_start, h1.old_len, h1.new_start, h1.new_len) == (4, 4, 4, 4)
    assert h1.changed_old_lines == [6]
    assert (h2.old_start, h2.old_len, h2.new_start, h2.new_len) == (14, 2, 14, 3)
    assert h2.changed_old_lines == [14]
    assert files[1].hunks[0].changed_old_lines == [1]
    news = files[2].hunks[0]
    assert (news.old_start, news.old_len, news.new_start, news.new_len) == (0, 0, 1, 1)


def test_removed_file_and_no_newline_marker():
    patch = (
        "--- a/old.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x = 1\n-y = 2\n\\ No newline at end of file\n"
        "--- a/z.py\n+++ b/z.py\n@@ -3 +3 @@\n-a\n+b\n"
    )
    removed, z = parse_unified_diff(patch)
    assert (removed.old_path, removed.new_path) == ("old.py", "/dev/null")
    assert removed.hunks[0].changed_old_lines == [1, 2]
    assert (z.hunks[0].old_len, z.hunks[0].new_len, z.hunks[0].changed_old_lines) == (1, 1, [3])


def test_gold_locations_from_pre_patch_source():
    read = SOURCES.get
    gold = gold_locations(PATCH, read, "python")
    assert gold.files == ["pkg/calc.py", "pkg/util.py", "NEWS.txt"]
    assert gold.functions == ["pkg/calc.py::Calc.add", "pkg/calc.py::helper"]


def test_gold_locations_without_source_or_language():
    assert gold_locations(PATCH, lambda p: None, "python").functions == []
    assert gold_locations(PATCH, SOURCES.get, "rust") == GoldLocations(
        files=["pkg/calc.py", "pkg/util.py", "NEWS.txt"], functions=[]
    )


def test_recall_and_hit_at_k():
    gold = ["a.py", "b.py"]
    ranked = ["./c.py", "a/a.py", "c.py", "d.py", "b/b.py"]
    # deduplicated ranking: c.py, a.py, d.py, b.py
    assert recall_at_k(ranked, gold, 1) == 0.0
    assert hit_at_k(ranked, gold, 1) == 0.0
    assert recall_at_k(ranked, gold, 2) == 0.5
    assert hit_at_k(ranked, gold, 2) == 1.0
    assert recall_at_k(ranked, gold, 3) == 0.5
    assert recall_at_k(ranked, gold, 4) == 1.0
    assert recall_at_k([], gold, 5) == 0.0
    # nothing to find: not applicable, never a free 1.0
    assert recall_at_k(ranked, [], 5) is None
    assert hit_at_k(ranked, [], 5) is None
    with pytest.raises(ValueError):
        recall_at_k(ranked, gold, 0)


def test_localization_result_and_flat_metrics():
    gold = gold_locations(PATCH, SOURCES.get, "python")
    result = localization(
        ["pkg/util.py", "pkg/calc.py", "setup.py"],
        ["pkg/calc.py::Calc.sub", "./pkg/calc.py::Calc.add"],
        gold,
        ks=(3, 1),
    )
    assert (result.n_gold_files, result.n_gold_functions) == (3, 2)
    assert result.as_metrics() == {
        "file_recall@1": pytest.approx(1 / 3),
        "file_hit@1": 1.0,
        "function_recall@1": 0.0,
        "function_hit@1": 0.0,
        "file_recall@3": pytest.approx(2 / 3),
        "file_hit@3": 1.0,
        "function_recall@3": 0.5,
        "function_hit@3": 1.0,
    }
    empty = localization(["x.py"], [], GoldLocations(files=[], functions=[]), ks=(1,))
    assert set(empty.as_metrics().values()) == {None}
