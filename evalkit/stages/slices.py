"""The slice of the config each stage reads: doit's `config_changed` watches exactly this."""

from __future__ import annotations

from typing import Any

import hashlib
import importlib.util
from pathlib import Path

from evalkit.artifacts import SCORES_FORMAT
from evalkit.config import Config, System
from evalkit.fsutil import atomic_write_text, digest, pretty_json
from evalkit.llm.prompts import PROMPTS_DIR
from evalkit.plugins import OWN, registry
from evalkit.graders.rubric_config import rubric_versions
from evalkit.isolation import for_run
from evalkit.llm.settings import configured
from evalkit.metrics.registry import ADDED


def system_slice(system: System) -> dict[str, Any]:
    """What changes a system's answers (not its name or description)."""
    return system.model_dump(mode="json", exclude={"name", "description", "suites", "matrix", "names", "scenario_of",
                                                      "api_key"})


def plugin_code(*points: str) -> dict[str, Any]:
    """The code of the outside parts (other distributions' entry points) of ``points``: a digest of each one's
    module source (every ``.py`` of its package when it is one), found without importing it. An edited outside
    scorer, kind, assertion or adapter reruns the stages that use it; nothing when there is none (slices stay)."""
    found: dict[str, str] = {}
    for point in points:
        for name, entry in sorted(registry(point).entries().items()):
            if entry.dist in (OWN, "<in-process>"):
                continue
            module = entry.target.partition(":")[0]
            try:
                spec = importlib.util.find_spec(module)
            except (ImportError, ValueError):
                spec = None
            origin = Path(spec.origin) if spec is not None and spec.origin else None
            if origin is None or not origin.is_file():
                found[f"{point}:{name}"] = "not found"
                continue
            files = sorted(origin.parent.rglob("*.py")) if origin.name == "__init__.py" else [origin]
            h = hashlib.sha256()
            for f in files:
                h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
            found[f"{point}:{name}"] = h.hexdigest()
    return {"plugin_code": found} if found else {}


def generate_slice(cfg: Config, system: System) -> dict[str, Any]:
    return {"system": system_slice(system), **plugin_code("adapters")}


def execute_slice(cfg: Config) -> dict[str, Any]:
    """The sandbox settings and where this run executes (decided once when the run starts): a
    changed backend, or ``auto`` finding a daemon or none, reruns execute (and validate); the container
    budget (``sandbox.containers``: how many at once) changes no result and is left out."""

    return {"sandbox": cfg.sandbox.model_dump(mode="json", exclude={"containers"}),
            "isolation": for_run(cfg.sandbox.backend).model_dump(mode="json"), **plugin_code("kinds", "sandbox_backends")}


def grade_slice(cfg: Config) -> dict[str, Any]:
    """Judge settings as they take effect (env model override, key present or not), the prompt
    templates' contents, and the assertion threshold.

    How the judge is reached (``base_url``, ``use_cache``) is not here: changing it leaves every
    verdict standing and regrades only the outputs without one (evalkit.stages.grade_retry).
    Neither are ``mode`` (sync or batch: the same questions, the same verdicts) nor the limits."""

    judge = cfg.judge.with_env().model_dump(
        mode="json", exclude={"use_cache", "base_url", "api_key", "mode", "concurrency", "budget_usd", "batch_poll_s",
                              "timeout_s", "max_retries", "circuit_after", "audit", "calibration",
                              "rate_limits", "fallback"})
    if judge.get("provider") == "anthropic":
        del judge["provider"]  # the default: slices (and verdicts) from before providers existed stand
    if judge.get("rubric") is None:
        del judge["rubric"]  # the default (codejudge): slices from before rubrics stand
    prompts = sorted((p.name, p.read_text(encoding="utf-8")) for p in PROMPTS_DIR.glob("*.j2"))

    rubrics = rubric_versions(cfg)  # the rubrics the project names: their fields and templates
    return {"judge": judge, "judge_configured": configured(cfg.judge), "prompts": digest(prompts),
            "pass_threshold": cfg.metrics.pass_threshold, **({"rubrics": rubrics} if rubrics else {}),
            **plugin_code("kinds", "assertions", "providers")}


def score_slice(cfg: Config) -> dict[str, Any]:
    rubrics = rubric_versions(cfg)  # a rubric's weights and decided values change judge metrics
    return {"metrics": cfg.metrics.model_dump(mode="json"), **({"rubrics": rubrics} if rubrics else {}),
            **_added_metrics(), **plugin_code("kinds"), "scores_format": SCORES_FORMAT}


def _added_metrics() -> dict[str, Any]:
    """Metrics added through evalkit.api.register_metric (nothing when none: slices stay as they were)."""

    return {"added_metrics": dict(sorted(ADDED.items()))} if ADDED else {}


def summarize_slice(cfg: Config) -> dict[str, Any]:
    return {
        "release": cfg.release,
        "title": cfg.title,
        "baseline": cfg.baseline_name,
        "report": cfg.report.model_dump(mode="json"),
        "calibration": cfg.judge.calibration.model_dump(mode="json"),
        "systems": [(s.name, s.description, s.adapter) for s in cfg.systems],
        **_added_metrics(),
    }


def render_slice(cfg: Config, release: str | None = None) -> dict[str, Any]:
    return {"release": release or cfg.release, "title": cfg.title}


def slice_digest(data: dict[str, Any]) -> str:
    return digest(data)


def write_slice(cfg: Config, name: str, data: dict[str, Any]) -> str:
    """Write a stage's config slice to `<work>/slices/<name>.json` when it changed; return the path.

    Tasks list this file in `file_dep`, so a changed slice reruns exactly the tasks that read it.
    """
    path = cfg.work_path / "slices" / f"{name}.json"
    text = pretty_json(data)
    try:
        if path.read_text(encoding="utf-8") == text:
            return str(path)
    except FileNotFoundError:
        pass
    atomic_write_text(path, text)
    return str(path)


def health_slice(cfg: Config, executed: bool) -> dict[str, Any]:
    """What case health reads beyond the case and its validation: the cap on ablations per case and, for an
    executed kind (its ablations and leaks run in the sandbox or read its tree), the execute slice."""
    return {**(execute_slice(cfg) if executed else {}), "ablations": cfg.validation.ablations,
            **plugin_code("kinds")}
