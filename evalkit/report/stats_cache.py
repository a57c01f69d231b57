"""The summarize cache of statistics: results of interval and paired-test calls from earlier runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, Callable, TypeVar

from pydantic import BaseModel

import evalkit.agreement
import evalkit.power
import evalkit.stats
from evalkit.fsutil import atomic_write_json, digest

STATS_CACHE_VERSION = 1

M = TypeVar("M", bound=BaseModel)


class StatsCache:
    """Results of the statistics functions from earlier summarize runs (`<work>/cache/stats.json`).

    Every entry is keyed by a digest of the call: the function, every argument (the values
    themselves, not where they came from) and a salt made of the source of the statistics code
    and the installed numpy and scipy. So an entry is only ever reused for the very same call,
    and a summarize whose intervals and tests are all cached needs neither numpy nor scipy (the
    bootstrap and their import are most of its time). The file keeps the entries the last run
    used, so it does not grow release after release, and the t quantiles computed so far (one per
    number of values a t interval was asked for) and paired t-test effects (one per number of pairs), so a recomputed
    interval or detectability of a known size needs no scipy.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.salt = _stats_salt()
        self.old: dict[str, Any] = {}
        self.used: dict[str, Any] = {}
        self.hits = self.misses = 0
        self.old_quantiles: list[list[float]] = []
        self.old_effects: list[list[float]] = []
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("salt") == self.salt and isinstance(data.get("entries"), dict):
                    self.old = data["entries"]
                    evalkit.stats.remember_t_quantiles(data.get("t_quantiles"))  # no scipy import for a known n
                    self.old_quantiles = evalkit.stats.t_quantiles()
                    evalkit.power.remember_ttest_effects(data.get("ttest_effects"))  # no scipy for a known n either
                    self.old_effects = evalkit.power.ttest_effects()
            except (FileNotFoundError, ValueError):
                pass

    def call(self, model: type[M], fn: Callable[..., M], *args: object, **kwargs: object) -> M:
        """fn(*args, **kwargs), or its stored result (a `model` dumped as JSON) for the same call."""
        key = digest([fn.__name__, args, sorted(kwargs.items())])
        stored = self.used.get(key)
        if stored is None:
            stored = self.old.get(key)
        if stored is not None:
            try:
                found: M | None = model.model_validate(stored)
            except ValueError:
                found = None
            if found is not None:
                self.hits += 1
                self.used[key] = stored
                return found
        self.misses += 1
        result = fn(*args, **kwargs)
        self.used[key] = result.model_dump(mode="json")
        return result

    def save(self) -> None:
        """Write the entries this run used, every t quantile known (`evalkit.stats.t_quantile`) and every paired t-test
        effect (`evalkit.power.ttest_effect`), when changed."""
        quantiles = evalkit.stats.t_quantiles()
        effects = evalkit.power.ttest_effects()
        if self.path is not None and (self.misses or self.used.keys() != self.old.keys()
                                      or quantiles != self.old_quantiles or effects != self.old_effects):
            atomic_write_json(self.path, {"salt": self.salt, "entries": self.used, "t_quantiles": quantiles,
                                          "ttest_effects": effects}, compact=True)


def _stats_salt() -> str:
    """What else a cached statistic depends on: the code computing it and the numerical libraries."""

    parts: list[Any] = [STATS_CACHE_VERSION, Path(evalkit.stats.__file__).read_text(encoding="utf-8"),
                        Path(evalkit.power.__file__).read_text(encoding="utf-8"),
                        Path(evalkit.agreement.__file__).read_text(encoding="utf-8")]
    for name in ("numpy", "scipy"):
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin) if spec and spec.origin else None
        if origin is None:
            parts.append([name, None])
            continue
        version = origin.parent / "version.py"
        marker = version if version.exists() else origin
        st = marker.stat()
        parts.append([name, str(marker), st.st_mtime_ns, st.st_size,
                      marker.read_text(encoding="utf-8", errors="replace") if marker == version else None])
    return digest(parts)


def cached_call(cache: StatsCache | None, model: type[M], fn: Callable[..., M], *args: object, **kwargs: object) -> M:
    """fn(*args, **kwargs) through ``cache`` (its result a ``model``), or directly without one."""
    return fn(*args, **kwargs) if cache is None else cache.call(model, fn, *args, **kwargs)
