"""The one place for metric metadata: name, description, direction, unit, how it aggregates.

The score stage writes metric values under these names; the summarize stage aggregates them as
`aggregate` says; every page reads display names and descriptions from here.
"""

from __future__ import annotations

from typing import Literal

from evalkit.models import Model


class MetricInfo(Model):
    """Metadata of one metric."""

    name: str
    """Key in scores.json and report.json."""
    display: str
    """Short column title."""
    description: str
    """One sentence shown as the column's explanation."""
    aggregate: Literal["rate", "mean", "sum"]
    """rate: 0/1 values, Wilson interval; mean: bootstrap BCa interval; sum: a total."""
    higher_is_better: bool | None = True
    """Direction, None when neither (counts, sizes)."""
    unit: str = ""
    """Unit shown after values ("s", "USD", "tokens", "" for fractions)."""
    scale: str = "0-1"
    """Range of a per-case value: "0-1", "1-5", "0-5", "count", "any"."""
    kinds: tuple[str, ...] = ()
    """Suite kinds the metric applies to (empty: all)."""
    headline: bool = False
    """Shown in the systems x metrics table and trend charts."""
    binary: bool = False
    """Paired comparisons use McNemar (binary) or Wilcoxon (scores)."""
    primary: int | None = None
    """Rank as a case's one-number summary in case tables (lowest present wins)."""


METRICS: dict[str, MetricInfo] = {}


def primary_metric(values: dict[str, float | None]) -> str | None:
    """The metric that best summarises one case's cell (e.g. resolved, then judge score)."""
    ranked = [(METRICS[m].primary, m) for m, v in values.items()
              if v is not None and m in METRICS and METRICS[m].primary is not None]
    return min(ranked)[1] if ranked else None


def metric(**kw: object) -> MetricInfo:
    info = MetricInfo(**kw)  # type: ignore[arg-type]
    METRICS[info.name] = info
    return info


# --- every suite --------------------------------------------------------------------------
metric(name="answered", display="Answered", aggregate="rate", binary=True, headline=True,
       description="Share of cases where the system returned an answer (no crash, timeout or bad output).")
metric(name="wall_s", display="Time", aggregate="mean", higher_is_better=False, unit="s", scale="any", headline=True,
       description="Wall time of the system under test per case, measured by evalkit.")
metric(name="cost_usd", display="Cost", aggregate="sum", higher_is_better=False, unit="USD", scale="any", headline=True,
       description="Cost the system under test reports (tokens priced by the system), summed over cases.")
metric(name="tokens", display="Tokens", aggregate="sum", higher_is_better=False, unit="tokens", scale="count",
       description="Input plus output tokens the system under test reports.")
metric(name="judge_cost_usd", display="Judge cost", aggregate="sum", higher_is_better=False, unit="USD", scale="any",
       description="What the LLM judge cost for this system's cases.")
metric(name="assertion_score", display="Assertions", aggregate="mean", scale="0-1", headline=True, primary=40,
       description="Weighted fraction of the case's deterministic assertions that held.")
metric(name="assertion_pass", display="Assert pass", aggregate="rate", binary=True,
       description="Share of cases whose assertion score reached the pass threshold.")

# --- code-producing suites ------------------------------------------------------------------
metric(name="syntax_valid", display="Parses", aggregate="rate", binary=True, headline=True,
       kinds=("migration", "generation"),
       description="Share of cases whose generated main file parses (tree-sitter, the suite's language).")
metric(name="codebleu", display="CodeBLEU", aggregate="mean", headline=True, primary=30, kinds=("migration", "generation", "patch"),
       description="Per-case CodeBLEU against the expected code, averaged over cases (source tokenizer).")
for part, text in [("ngram_match", "n-gram match"), ("weighted_ngram_match", "weighted n-gram match"),
                   ("syntax_match", "syntax (AST) match"), ("dataflow_match", "dataflow match")]:
    metric(name=f"codebleu_{part}", display=f"CB {text}", aggregate="mean", kinds=("migration", "generation", "patch"),
           description=f"CodeBLEU component: {text}, per case, averaged over cases.")
