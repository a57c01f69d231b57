"""The patch kind's metrics (SWE-bench style): resolved, pass@k, the test runs, context localization. Registered when
the kind loads (its __init__ imports this module), with the public ``metric(...)`` an outside kind uses."""

from __future__ import annotations

from evalkit.metrics.registry import metric

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
