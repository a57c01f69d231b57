"""Classifying strings with an answered expression (plain functions, no evalkit types)."""

import re


def compile_or_reason(pattern: str | None) -> tuple[re.Pattern[str] | None, str]:
    """The compiled expression, or None with why not."""
    if not pattern:
        return None, "no expression"
    try:
        return re.compile(pattern), ""
    except re.error as e:
        return None, f"does not compile: {e}"


def misclassified(rx: re.Pattern[str], positives: list[str], negatives: list[str]) -> list[str]:
    """The strings the expression gets wrong: a positive it does not match, a negative it matches."""
    return ([s for s in positives if not rx.fullmatch(s)] + [s for s in negatives if rx.fullmatch(s)])
