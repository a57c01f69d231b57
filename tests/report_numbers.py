"""The numbers of a report.json that must not move when code is reorganised.

Every number, boolean and null of the report, minus what measures time (metrics with unit "s" and
every comparison or Holm family that holds one, since a time metric's p-value can reorder a family: the
Holm-adjusted p, the level Holm held a comparison to, whether it was testable at that level, and the power
figures sized at it)
and where the stages ran (the cluster workers' calls and seconds, the sandbox images' sizes on that host), and the wall time of case health's ablations.
Kept as the report's own nested shape with only those leaves, so a difference names its path.
"""

from __future__ import annotations

import math
from typing import Any

from evalkit.metrics.registry import METRICS

TIME_LIKE = frozenset(name for name, info in METRICS.items() if info.unit == "s")
WHERE_IT_RAN = frozenset({"workers", "images"})
WALL_TIMES = frozenset({"ablation_seconds"})
"""Wall times the report records beside its results (case health's ablations)."""
RANK_DEPENDENT = frozenset({"p_holm", "significant", "alpha_holm", "testable", "mdd"})
"""A comparison's fields that depend on its rank in its Holm family (which a time metric's p-value reorders)."""


def _time_families(report: Any) -> set[Any]:
    found: set[Any] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("metric") in TIME_LIKE and node.get("holm_family") is not None:
                found.add(node["holm_family"])
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit(report)
    return found


def numbers(report: Any) -> Any:
    """The report pruned to its non-time numeric leaves (None where nothing is left)."""
    families = _time_families(report)
    if isinstance(report, dict):  # where stages ran (cluster workers' calls and seconds) is not a result
        report = {k: v for k, v in report.items() if k not in WHERE_IT_RAN}

    def prune(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("metric") in TIME_LIKE:
                return None
            out = {}
            comparison = node.get("comparison")
            timed = isinstance(comparison, dict) and comparison.get("holm_family") in families
            for k, v in node.items():
                if k in TIME_LIKE or k in WALL_TIMES or (k in RANK_DEPENDENT and node.get("holm_family") in families):
                    continue
                if k == "detectability" and timed:  # sized at the Holm level, which depends on the rank
                    continue
                kept = prune(v)
                if kept is not None:
                    out[k] = kept
            return out or None
        if isinstance(node, list):
            kept_list = [prune(v) for v in node]
            return kept_list if any(v is not None for v in kept_list) else None
        if isinstance(node, bool) or isinstance(node, (int, float)):
            return node
        return None

    return prune(report)


def differences(expected: Any, actual: Any, path: str = "", limit: int = 40) -> list[str]:
    """Paths where two pruned reports differ (floats equal to 1e-9 relative)."""
    out: list[str] = []

    def walk(e: Any, a: Any, p: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(e, dict) and isinstance(a, dict):
            for k in sorted(set(e) | set(a)):
                walk(e.get(k), a.get(k), f"{p}/{k}")
        elif isinstance(e, list) and isinstance(a, list):
            if len(e) != len(a):
                out.append(f"{p}: {len(e)} items expected, {len(a)} found")
            for i, (x, y) in enumerate(zip(e, a)):
                walk(x, y, f"{p}/{i}")
        elif isinstance(e, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
            if not math.isclose(e, a, rel_tol=1e-9, abs_tol=1e-12):
                out.append(f"{p}: expected {e!r}, found {a!r}")
        elif e != a or type(e) is not type(a) and not (isinstance(e, (int, float)) and isinstance(a, (int, float))):
            out.append(f"{p}: expected {e!r}, found {a!r}")

    walk(expected, actual, path)
    return out
