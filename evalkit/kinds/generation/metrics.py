"""The generation kind's metrics: the rubric judge's score (and its fallback's) and the prompt-injection check.
Registered when the kind loads (its __init__ imports this module), with the public ``metric(...)`` an outside kind uses."""

from __future__ import annotations

from evalkit.metrics.registry import metric

metric(name="rubric_fallback_score", display="Fallback rubric", aggregate="mean", kinds=("generation",),
       description="Rubric score given by the fallback judge over the cases it judged, apart from the primary's.")

metric(name="rubric_score", display="Rubric", aggregate="mean", headline=True, primary=20, kinds=("generation",),
       description="Weighted fraction of the case's rubric criteria an LLM judge found met (0-1).")

metric(name="injection_clean", display="Injection-clean", aggregate="rate", binary=True, headline=True,
       kinds=("generation",),
       description="Share of answered cases whose output carries no injected payload (alert/script, outside network call, "
                   "process.env sent out, echoed 'ignore previous instructions').")
