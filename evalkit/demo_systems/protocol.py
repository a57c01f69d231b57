"""Shared plumbing of the demo systems: read the case JSON, answer with output JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable


def read_case() -> tuple[dict[str, Any], Path]:
    """The case JSON (from $EVALKIT_CASE, else standard input) and the work folder."""
    path = os.environ.get("EVALKIT_CASE")
    if path:
        return json.loads(Path(path).read_text(encoding="utf-8")), Path(path).parent
    return json.loads(sys.stdin.read()), Path.cwd()


def answer(result: dict[str, Any]) -> None:
    json.dump(result, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


def migrate_main(rewrite: Callable[[str, dict[str, Any]], str]) -> None:
    """Run a file-level migration: rewrite the legacy file, answer with the new file."""
    case, work = read_case()
    legacy = (work / case["files"]["inputs.legacy_file"]).read_text(encoding="utf-8")
    new = rewrite(legacy, case)
    answer({"files": {case["inputs"]["file_path"]: new}, "steps": 1,
            "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0}})
