"""The `rx_rejects` assertion type: the answered expression rejects the reference's negatives (and `value`)."""

from evalkit.contracts import AssertionContext, AssertionOutcome

from rx_evalkit.judge import compile_or_reason
from rx_evalkit.models import RegexReference


def rx_rejects(ctx: AssertionContext) -> AssertionOutcome:
    value: object = ctx.spec.value
    negatives = [str(s) for s in value] if isinstance(value, list) else []
    if isinstance(ctx.reference, RegexReference):
        negatives += ctx.reference.negatives
    rx, why = compile_or_reason(ctx.text.strip())
    if rx is None:
        return AssertionOutcome(False, why)
    matched = [s for s in negatives if rx.fullmatch(s)]
    if matched:
        return AssertionOutcome(False, f"matches {len(matched)} of {len(negatives)} negatives: {matched!r}")
    return AssertionOutcome(True, f"rejects all {len(negatives)} negatives")
