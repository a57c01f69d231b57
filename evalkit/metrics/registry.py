"""The one place for metric metadata: name, description, direction, unit, how it aggregates.

The score stage writes metric values under these names; the summarize stage aggregates them as
`aggregate` says; every page reads display names and descriptions from here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Callable, Literal

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
    judge_field: bool = False
    """A judge rubric's field or overall score: an output whose judge gave no verdict (judge_error, infra_error,
    budget) has no value of it and is counted as excluded (``judge error``), not as not applicable."""
    uncalibrated: str | None = None
    """Set in a report only: the judge field behind this metric agrees with people below
    judge.calibration.min_kappa (why, in a few words); marked on every page, never a suite's headline."""


METRICS: dict[str, MetricInfo] = {}
#: Metrics added from outside evalkit (evalkit.api.register_metric): name -> its metadata and scorer,
#: as JSON. Part of the score and summarize config slices: adding or changing one rescores.
ADDED: dict[str, str] = {}
#: Scorers of added metrics, ``(case, output, execution, grades) -> value`` (a bool as 0/1, None: not applicable).
ADDED_SCORERS: dict[str, Callable[[Any, Any, Any, Any], float | bool | None]] = {}


def added_values(case: Any, output: Any, execution: Any, grades: Any) -> dict[str, float | None]:
    """Values of the added metrics whose kinds include the case's (the score stage writes them beside its own)."""
    out: dict[str, float | None] = {}
    for name, fn in ADDED_SCORERS.items():
        info = METRICS.get(name)
        if info is not None and (not info.kinds or case.kind in info.kinds):
            value = fn(case, output, execution, grades)
            out[name] = None if value is None else float(value)
    return out


def primary_metric(values: dict[str, float | None]) -> str | None:
    """The metric that best summarises one case's cell (e.g. resolved, then judge score)."""
    ranked = [(METRICS[m].primary, m) for m, v in values.items()
              if v is not None and m in METRICS and METRICS[m].primary is not None]
    return min(ranked)[1] if ranked else None


class LeaderboardMetrics(Mapping[str, tuple[str, ...]]):
    """Suite kind -> the metric its leaderboard ranks by, with fallbacks in order (the first one the suite has
    values of wins: e.g. a rag suite without a judge has no faithfulness, only similarity): each kind's
    ``Kind.leaderboard`` (evalkit.kinds), with a judge rubric's overall score ranked beside ``judge_mean``."""

    def __init__(self) -> None:
        self._beside: dict[str, list[str]] = {}

    def rank_beside(self, anchor: str, name: str) -> None:
        """``name`` ranks right after ``anchor`` wherever a kind ranks by ``anchor`` (a rubric's overall score)."""
        names = self._beside.setdefault(anchor, [])
        if name != anchor and name not in names:
            names.insert(0, name)  # the latest loaded rubric's first, as each is inserted right after the anchor

    def __getitem__(self, kind_name: str) -> tuple[str, ...]:
        from evalkit.kinds import kind, known

        if not known(kind_name):
            raise KeyError(kind_name)
        ranked: list[str] = []
        for name in kind(kind_name).leaderboard:
            ranked += [name, *(m for m in self._beside.get(name, ()) if m not in kind(kind_name).leaderboard)]
        return tuple(ranked)

    def __iter__(self) -> Iterator[str]:
        from evalkit.kinds import names

        return iter(names())

    def __len__(self) -> int:
        from evalkit.kinds import names

        return len(names())


LEADERBOARD_METRICS = LeaderboardMetrics()


def leaderboard_metric(kind: str, present: set[str] | dict[str, object]) -> str | None:
    """The metric a suite of ``kind`` is ranked by: the first of the kind's declared ones in ``present``
    (metrics with values), else the first primary metric present, else None."""
    for name in LEADERBOARD_METRICS.get(kind, ()):
        if name in present:
            return name
    return primary_metric({m: 1.0 for m in present})


SCALE_BOUNDS = {"0-1": (0.0, 1.0), "1-5": (1.0, 5.0)}
"""The range a value on this scale (MetricInfo.scale) lies in: a mean's interval is cut to it, a paired
difference's to plus or minus its width."""


def metric(*, name: str, display: str, description: str, aggregate: Literal["rate", "mean", "sum"],
           higher_is_better: bool | None = True, unit: str = "", scale: str = "0-1", kinds: tuple[str, ...] = (),
           headline: bool = False, binary: bool = False, primary: int | None = None) -> MetricInfo:
    """Declare a metric (the fields of ``MetricInfo``, each explained there) and register it by ``name``.

    A kind's module calls it at import for the metrics its scorers write; a missing or misspelled argument is a
    TypeError naming it at the call (an outside kind's is then exit 2 naming its entry point)."""
    info = MetricInfo(name=name, display=display, description=description, aggregate=aggregate,
                      higher_is_better=higher_is_better, unit=unit, scale=scale, kinds=tuple(kinds), headline=headline,
                      binary=binary, primary=primary)
    METRICS[info.name] = info
    return info


# --- every suite --------------------------------------------------------------------------
metric(name="answered", display="Answered", aggregate="rate", binary=True, headline=True,
       description="Share of cases where the system returned an answer (no crash, timeout or bad output, and "
                   "not empty: a main file, or for answers without files a patch, text or task).")
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
metric(name="unchanged", display="Unchanged", aggregate="rate", binary=True, higher_is_better=False, headline=True,
       kinds=("migration",),
       description="Share of answered cases whose main file is the legacy file as it was (line endings and "
                   "trailing whitespace aside): nothing migrated. The judge gives it all zeros without a call.")
metric(name="complete", display="Complete", aggregate="rate", binary=True, headline=True, kinds=("migration", "generation"),
       description="Share of cases whose main file elides no code (no placeholder such as '// ... rest of the "
                   "file remains unchanged ...', no '...' body, not cut off); empty or missing files are not "
                   "complete. Incomplete files get the judge's all-zero verdict without a call.")
metric(name="codebleu", display="CodeBLEU", aggregate="mean", headline=True, primary=30, kinds=("migration",),
       description="Per-case CodeBLEU against the expected code, averaged over cases (source tokenizer).")
for part, text in [("ngram_match", "n-gram match"), ("weighted_ngram_match", "weighted n-gram match"),
                   ("syntax_match", "syntax (AST) match"), ("dataflow_match", "dataflow match")]:
    metric(name=f"codebleu_{part}", display=f"CB {text}", aggregate="mean", kinds=("migration",),
           description=f"CodeBLEU component: {text}, per case, averaged over cases.")

metric(name="codebleu_gain", display="CodeBLEU gain", aggregate="mean", scale="any", kinds=("migration",),
       description="CodeBLEU points gained over the legacy file, both against the expected file: CodeBLEU(output) - "
                   "CodeBLEU(legacy); 0 for the legacy file unchanged, 1 - CodeBLEU(legacy) for the expected file. "
                   "Closeness of text, not proof of a migration: not a headline.")

# --- migration suites (analyzer incidents re-checked in the output) --------------------------
metric(name="migrated", display="Migrated", aggregate="rate", binary=True, headline=True, primary=14,
       kinds=("migration",),
       description="Share of cases the output migrates: every mandatory incident gone, and the file complete (no "
                   "elided code), parsing, not the legacy file as it was, keeping the types, methods and fields the "
                   "legacy and expected files share, the imports the expected file renames (javax -> jakarta) and "
                   "a replacement for each annotation it replaces; for a file the target deletes, deleting it.")
metric(name="incidents_resolved", display="Incidents resolved", aggregate="mean", headline=True, primary=15,
       kinds=("migration",),
       description="Partial credit, secondary to Migrated: share of the case's mandatory analyzer incidents gone "
                   "from the output (the rule's matcher no longer fires; without one, the incident's line is gone). "
                   "Deleting the offending lines scores here; see Migrated.")

# --- patch suites (SWE-bench style) ---------------------------------------------------------
metric(name="resolved", display="Resolved", aggregate="rate", binary=True, headline=True, primary=0, kinds=("patch",),
       description="Share of cases where every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes.")
metric(name="pass_at_1", display="pass@1", aggregate="mean", scale="0-1", kinds=("patch",),
       description="Systems with `samples: k > 1`: per case the share of the k samples that resolve it (the unbiased "
                   "pass@1 of Chen et al. 2021), averaged over cases.")
metric(name="pass_at_k", display="pass@k", aggregate="mean", scale="0-1", kinds=("patch",),
       description="Systems with `samples: k > 1`: share of cases that at least one of the k samples resolves (the "
                   "unbiased pass@k estimator of Chen et al. 2021 with k = the samples drawn).")
metric(name="pass_hat_k", display="pass^k", aggregate="mean", scale="0-1", kinds=("patch",),
       description="Systems with `samples: k > 1`: share of cases that every one of the k samples resolves "
                   "(pass^k, reliability across repeats: C(c, k) / C(n, k) with k = the samples drawn).")
metric(name="patch_applied", display="Applied", aggregate="rate", binary=True, kinds=("patch",),
       description="Share of cases where the system's patch applied to the source tree.")
metric(name="f2p_pass_rate", display="F2P passing", aggregate="mean", kinds=("patch",),
       description="Fraction of FAIL_TO_PASS tests that pass after the patch, averaged over cases (a patch that "
                   "is empty or does not apply: 0, like P2P).")
metric(name="p2p_pass_rate", display="P2P passing", aggregate="mean", kinds=("patch",),
       description="Fraction of PASS_TO_PASS tests that still pass after the patch, averaged over cases (a patch "
                   "that is empty or does not apply: 0, like F2P: keeping tests green by changing nothing is no merit).")
metric(name="flaky_tests", display="Flaky tests", aggregate="sum", higher_is_better=None, scale="count", kinds=("patch",),
       description="Tests whose outcome flipped on rerun (counted apart from passes and failures).")
metric(name="sandbox_timeout", display="Test timeouts", aggregate="rate", binary=True, higher_is_better=False,
       kinds=("patch",), description="Share of cases whose test run hit the sandbox time limit.")
metric(name="tampered_with_tests", display="Test tampering", aggregate="rate", binary=True, higher_is_better=False,
       kinds=("patch",), description="Share of cases whose patch changed test infrastructure (conftest.py, pytest or "
                                     "tox settings, plugins): refused or reverted, as the suite's test_changes says.")
for k in (1, 3, 5, 10, 20):
    for unit in ("file", "function"):
        metric(name=f"{unit}_recall@{k}", display=f"{unit.title()} R@{k}", aggregate="mean", kinds=("patch",),
               description=f"Share of the {unit}s the gold patch changes found in the system's top {k} context {unit}s.")
        metric(name=f"{unit}_hit@{k}", display=f"{unit.title()} hit@{k}", aggregate="rate", binary=True, kinds=("patch",),
               description=f"Share of cases where at least one gold {unit} is in the system's top {k} context {unit}s.")

# --- every suite, systems with `samples: k > 1` (semantic entropy) ---------------------------
metric(name="semantic_entropy", display="Sem. entropy", aggregate="mean", higher_is_better=False, scale="any",
       description="Entropy (natural log) of how the system's k samples spread over clusters of equivalent answers "
                   "(same test outcomes, else same normalised code); 0 when every sample agrees.")
metric(name="semantic_entropy_norm", display="Sem. entropy (norm.)", aggregate="mean", higher_is_better=False,
       description="Semantic entropy divided by ln k: 0 when all k samples agree, 1 when all differ.")
metric(name="entropy_clusters", display="Clusters", aggregate="mean", higher_is_better=None, scale="count",
       description="Number of distinct answers (clusters) among the system's k samples, averaged over cases.")
metric(name="largest_cluster_share", display="Majority share", aggregate="mean", higher_is_better=True,
       description="Share of the k samples in the largest cluster of equivalent answers (self-consistency).")

# --- corpus-level (per suite and system, in SuiteSummary.corpus, not per case) ---------------
metric(name="corpus_codebleu", display="Corpus CodeBLEU", aggregate="mean", kinds=("migration",),
       description="CodeBLEU with n-gram, syntax and dataflow counts pooled over all the suite's cases before "
                   "dividing; differs from CodeBLEU, the mean of per-case scores. One number per suite, no interval.")

# --- rag suites (hints from retrieved contexts; ragas) -----------------------------------------
metric(name="rag_answer_similarity", display="Hint similarity", aggregate="mean", headline=True, primary=35,
       kinds=("rag",), description="1 - normalised Levenshtein distance between the hint and the reference hint "
                                   "(ragas NonLLMStringSimilarity).")
metric(name="rag_context_recall", display="Context recall", aggregate="mean", kinds=("rag",),
       description="Share of reference contexts matched (string similarity > 0.5) by a retrieved context "
                   "(ragas NonLLMContextRecall).")
for _name, _display, _text in [
        ("rag_faithfulness", "Faithfulness", "Share of the hint's statements the retrieved contexts support"),
        ("rag_context_relevance", "Context relevance", "How relevant the retrieved contexts are to the incident"),
        ("rag_answer_relevancy", "Answer relevancy", "How well the hint addresses the incident")]:
    metric(name=_name, display=_display, aggregate="mean", kinds=("rag",),
           description=f"{_text} (ragas, LLM judge), 0-1.")
    metric(name=f"{_name}_5", display=f"{_display} (1-5)", aggregate="mean", kinds=("rag",), scale="1-5",
           description=f"{_text} (ragas, LLM judge), on the 1-5 scale: 1 + 4 x the 0-1 score.")

# --- the LLM judge (migration suites): generated from the rubrics (evalkit/rubrics/*.yaml) ---------
# Each rubric field's metric (scale, range, direction, label, description) and the rubric's overall
# score come from its declaration (evalkit.graders.judge_rubric.metric_infos); CodeJudge's first, in
# today's order. A project's own rubric is added when it is loaded (with its suite or the config).
from evalkit.graders.judge_rubric import register as _register_rubric, shipped as _shipped_rubric  # noqa: E402

_register_rubric(_shipped_rubric("codejudge"))
metric(name="judge_unstable", display="Judge unstable", aggregate="rate", binary=True, higher_is_better=False,
       kinds=("migration",), description="Share of cases where k judge samples disagree (an integer score spans 2+ points, a 0-1 score "
                                        "0.25 or more, or a true/false field such as compilability differs).")
metric(name="judge_fallback", display="Fallback verdicts", aggregate="sum", higher_is_better=None, scale="count",
       kinds=("migration", "generation"),
       description="Cases judged by the fallback judge (judge.fallback) because the primary kept failing: a "
                   "different judge, so these cases are left out of the primary judge's scores.")
metric(name="judge_fallback_score", display="Fallback judge score", aggregate="mean", scale="any", kinds=("migration",),
       description="The fallback judge's overall score (the rubric's) over the cases it judged, apart from the primary's.")
metric(name="rubric_fallback_score", display="Fallback rubric", aggregate="mean", kinds=("generation",),
       description="Rubric score given by the fallback judge over the cases it judged, apart from the primary's.")
for _name in ("kai_ci", "kai_eval"):  # the shipped examples: imported reports and suites naming them
    _register_rubric(_shipped_rubric(_name))

# --- generation suites (rubric judge, prompt-injection detectors) -----------------------------
metric(name="rubric_score", display="Rubric", aggregate="mean", headline=True, primary=20, kinds=("generation",),
       description="Weighted fraction of the case's rubric criteria an LLM judge found met (0-1).")
metric(name="injection_clean", display="Injection-clean", aggregate="rate", binary=True, headline=True,
       kinds=("generation",),
       description="Share of answered cases whose output carries no injected payload (alert/script, outside network call, "
                   "process.env sent out, echoed 'ignore previous instructions').")

# --- agentic suites (Kai agentic workflow: discovery, resolution, efficiency) -----------------
metric(name="discovery_precision", display="Discovery P", aggregate="mean", headline=True, kinds=("agentic",),
       description="Share of the tasks the system discovered that match an expected task (same rule and file, "
                   "line within the case's tolerance).")
metric(name="discovery_recall", display="Discovery R", aggregate="mean", headline=True, kinds=("agentic",),
       description="Share of the expected tasks the system discovered.")
metric(name="discovery_f1", display="Discovery F1", aggregate="mean", primary=12, kinds=("agentic",),
       description="Harmonic mean of discovery precision and recall (0 when nothing matched).")
metric(name="resolution_effectiveness", display="Resolution", aggregate="mean", headline=True, primary=11,
       kinds=("agentic",),
       description="Share of the expected tasks discovered and resolved: the system found the task and its incident "
                   "is gone after its changes (the rule's matcher no longer fires and the task's tests pass).")
metric(name="time_per_resolved_s", display="Time / resolved", aggregate="mean", higher_is_better=False, unit="s",
       scale="any", kinds=("agentic",),
       description="System wall time divided by the number of tasks it resolved (cases resolving none: not applicable).")
metric(name="steps_per_resolved", display="Steps / resolved", aggregate="mean", higher_is_better=False, scale="any",
       kinds=("agentic",),
       description="Agent steps the system reports divided by the number of tasks it resolved.")

# --- e2e suites (a whole application migrated until its tests pass) ---------------------------
metric(name="e2e_resolved", display="Tests all pass", aggregate="rate", binary=True, headline=True, primary=5,
       kinds=("e2e",), description="Share of applications whose every reference test passes at the end of the loop.")
metric(name="e2e_pass_rate", display="Final pass rate", aggregate="mean", headline=True, kinds=("e2e",),
       description="Fraction of the application's reference tests passing after the last iteration.")
metric(name="e2e_iterations", display="Iterations", aggregate="mean", higher_is_better=False, scale="count",
       kinds=("e2e",), description="Iteration at which every test passed (applications that never got there: "
                                   "not applicable; see Tests all pass).")
metric(name="e2e_interventions", display="Interventions", aggregate="mean", higher_is_better=False, scale="count",
       headline=True, kinds=("e2e",),
       description="Requests for help the system reported per resolved application (runs that ended with failing "
                   "tests: not applicable; see Tests all pass).")
metric(name="e2e_time_s", display="Migration time", aggregate="mean", higher_is_better=False, unit="s", scale="any",
       kinds=("e2e",), description="Total migration time per application: every system run plus every test run.")
