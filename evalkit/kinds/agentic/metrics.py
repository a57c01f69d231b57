"""The agentic kind's metrics (Kai agentic workflow: discovery, resolution, efficiency). Registered when the kind loads
(its __init__ imports this module), with the public ``metric(...)`` an outside kind uses."""

from __future__ import annotations

from evalkit.metrics.registry import metric

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
