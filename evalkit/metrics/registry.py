"""The one place for metric metadata: name, description, direction, unit, how it aggregates.

The score stage writes metric values under these names; the summarize stage aggregates them as
`aggregate` says; every page reads display names and descriptions from here.
"""

from __future__ import annotations

from evalkit.graders.rubric_config import register as _register_rubric, shipped as _shipped_rubric
from evalkit.metrics.metric_info import (MetricInfo, METRICS, ADDED, ADDED_SCORERS, primary_metric, LeaderboardMetrics, LEADERBOARD_METRICS, leaderboard_metric, SCALE_BOUNDS, metric, show_in_order)

__all__ = ["MetricInfo", "METRICS", "ADDED", "ADDED_SCORERS", "primary_metric", "LeaderboardMetrics", "LEADERBOARD_METRICS", "leaderboard_metric", "SCALE_BOUNDS", "metric", "show_in_order"]

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
metric(name="complete", display="Complete", aggregate="rate", binary=True, headline=True, kinds=("migration", "generation"),
       description="Share of cases whose main file elides no code (no placeholder such as '// ... rest of the "
                   "file remains unchanged ...', no '...' body, not cut off); empty or missing files are not "
                   "complete. Incomplete files get the judge's all-zero verdict without a call.")

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

# --- the LLM judge (migration suites): generated from the rubrics (evalkit/rubrics/*.yaml) ---------
# Each rubric field's metric (scale, range, direction, label, description) and the rubric's overall
# score come from its declaration (evalkit.graders.rubric_config.metric_infos); CodeJudge's first, in
# today's order. A project's own rubric is added when it is loaded (with its suite or the config).
# Registering CodeJudge asks which of evalkit's kinds a rubric grades (rubric_config.judged_kinds), which loads
# them: each registers its own metrics then (evalkit/kinds/<kind>/metrics.py, the metric(...) an outside kind calls).

_register_rubric(_shipped_rubric("codejudge"))
metric(name="judge_fallback", display="Fallback verdicts", aggregate="sum", higher_is_better=None, scale="count",
       kinds=("migration", "generation"),
       description="Cases judged by the fallback judge (judge.fallback) because the primary kept failing: a "
                   "different judge, so these cases are left out of the primary judge's scores.")
for _name in ("kai_ci", "kai_eval"):  # the shipped examples: imported reports and suites naming them
    _register_rubric(_shipped_rubric(_name))

# --- the order the pages show metrics in ------------------------------------------------------------
# A suite's columns, the headline tables and report.json's metric_info list metrics in METRICS' order. The kinds
# register theirs as one block each, while CodeJudge registers above; the pages keep the order they had when every
# metric was declared here, shared and kind metrics interleaved. A metric not named here (a new one, an outside
# kind's, a project rubric's) comes after these, in registration order.
show_in_order((
    "answered", "wall_s", "cost_usd", "tokens", "judge_cost_usd", "assertion_score", "assertion_pass",
    "syntax_valid", "unchanged", "complete", "codebleu", "codebleu_ngram_match", "codebleu_weighted_ngram_match",
    "codebleu_syntax_match", "codebleu_dataflow_match", "codebleu_gain", "migrated", "incidents_resolved",
    "resolved", "pass_at_1", "pass_at_k", "pass_hat_k", "patch_applied", "f2p_pass_rate", "p2p_pass_rate",
    "flaky_tests", "sandbox_timeout", "tampered_with_tests",
    *(f"{unit}_{what}@{k}" for k in (1, 3, 5, 10, 20) for unit in ("file", "function") for what in ("recall", "hit")),
    "semantic_entropy", "semantic_entropy_norm", "entropy_clusters", "largest_cluster_share", "corpus_codebleu",
    "rag_answer_similarity", "rag_context_recall", "rag_faithfulness", "rag_faithfulness_5", "rag_context_relevance",
    "rag_context_relevance_5", "rag_answer_relevancy", "rag_answer_relevancy_5",
    "judge_semantic_equivalence", "judge_rule_adherence", "judge_faithfulness", "judge_code_quality", "judge_mean",
    "judge_compilable", "judge_unstable", "judge_fallback", "judge_fallback_score", "rubric_fallback_score",
    "judge_effectiveness", "judge_specificity", "judge_reasoning", "judge_competency", "judge_kai_ci_mean",
    "judge_valid_code", "judge_unnecessary_changes", "judge_completeness", "judge_functional_parity",
    "judge_residual_effort", "judge_kai_eval_mean",
    "rubric_score", "injection_clean",
    "discovery_precision", "discovery_recall", "discovery_f1", "resolution_effectiveness", "time_per_resolved_s",
    "steps_per_resolved",
    "e2e_resolved", "e2e_pass_rate", "e2e_iterations", "e2e_interventions", "e2e_time_s",
))
