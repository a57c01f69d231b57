"""The e2e kind's metrics (a whole application migrated until its tests pass). Registered when the kind loads (its
__init__ imports this module), with the public ``metric(...)`` an outside kind uses."""

from __future__ import annotations

from evalkit.metrics.registry import metric

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
