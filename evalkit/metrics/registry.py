"""The one place for metric metadata: name, description, direction, unit, how it aggregates.

The score stage writes metric values under these names; the summarize stage aggregates them as
`aggregate` says; every page reads display names and descriptions from here.
"""

from __future__ import annotations

from evalkit.graders.rubric_config import register as _register_rubric, shipped as _shipped_rubric
from evalkit.metrics.metric_info import (MetricInfo, METRICS, ADDED, ADDED_SCORERS, added_values, primary_metric, LeaderboardMetrics, LEADERBOARD_METRICS, leaderboard_metric, SCALE_BOUNDS, metric)

__all__ = ["MetricInfo", "METRICS", "ADDED", "ADDED_SCORERS", "added_values", "primary_metric", "LeaderboardMetrics", "LEADERBOARD_METRICS", "leaderboard_metric", "SCALE_BOUNDS", "metric"]

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
# score come from its declaration (evalkit.graders.rubric_config.metric_infos); CodeJudge's first, in
# today's order. A project's own rubric is added when it is loaded (with its suite or the config).

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
