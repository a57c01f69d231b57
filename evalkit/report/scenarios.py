"""The scenario section: every configuration matrix's scenarios against its all-off scenario.

A system entry with a `matrix` (e.g. Kai's agents x solution server) expands into one system per
combination; here those systems are gathered back into a group, aggregated over the suites they
ran on, and each compared with the group's first combination on the same cases (McNemar exact /
Wilcoxon signed-rank, Holm per scenario), the same statistics as every suite table.
"""

from __future__ import annotations

from evalkit.artifacts import ScoresArtifact
from evalkit.cases import Project
from evalkit.config import Config
from evalkit.metrics.registry import METRICS
from evalkit.report.aggregates import aggregate_scores, metric_order
from evalkit.report.comparisons import compare_suite
from evalkit.report.models import Scenario, ScenarioGroup

# What the Kai design reports per scenario, in this order; other metrics the group has follow.
SCENARIO_METRICS = ("e2e_time_s", "e2e_resolved", "e2e_pass_rate", "e2e_interventions", "e2e_iterations",
                    "discovery_precision", "discovery_recall", "discovery_f1", "resolution_effectiveness",
                    "time_per_resolved_s", "steps_per_resolved")


def scenario_groups(cfg: Config, project: Project, scores: dict[tuple[str, str], ScoresArtifact]) -> list[ScenarioGroup]:
    """One group per system entry that declared a `matrix`, in config order."""

    groups: dict[str, list] = {}
    for system in cfg.systems:
        if system.scenario_of:
            groups.setdefault(system.scenario_of, []).append(system)
    out = []
    for name, members in groups.items():
        names = [s.name for s in members]
        mine = {(sn, ck): s for (sn, ck), s in scores.items() if sn in names}
        if not mine:
            continue
        present = metric_order(mine.values())
        metrics = [m for m in SCENARIO_METRICS if m in present]
        metrics += [m for m in present if m not in metrics and METRICS[m].aggregate != "sum"
                    and m not in ("answered", "cost_usd", "tokens", "judge_cost_usd")]
        axes: dict[str, list] = {}
        for s in members:
            for key in (k for k in s.settings if k not in axes and all(k in m.settings for m in members)):
                if len({repr(m.settings[key]) for m in members}) > 1:
                    axes[key] = list(dict.fromkeys(m.settings[key] for m in members))
        case_keys = sorted({ck for _sn, ck in mine})
        as_baseline = cfg.model_copy(update={"baseline": names[0]})
        out.append(ScenarioGroup(
            name=name, axes=axes, baseline=names[0],
            scenarios=[Scenario(system=s.name, settings={k: s.settings[k] for k in axes}) for s in members],
            suites=sorted({ck.split("/", 1)[0] for ck in case_keys}), metrics=metrics,
            systems={n: aggregate_scores([s for (sn, _), s in mine.items() if sn == n], metrics, cfg) for n in names},
            comparisons=compare_suite(as_baseline, metrics, mine, names, case_keys)))
    return out
