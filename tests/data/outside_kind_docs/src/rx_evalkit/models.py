"""What a `regex` case holds."""

from evalkit.models import Model


class RegexInputs(Model):
    """Inputs of a regex case: what the expression must match, with a few examples."""

    description: str
    """The strings the expression must match, in words."""
    examples: list[str] = []
    """A few strings it must match."""


class RegexReference(Model):
    """Reference of a regex case: a correct expression and the strings it is judged on."""

    pattern: str
    """A correct expression (what the gold system answers)."""
    positives: list[str]
    """Strings the answer must match in full."""
    negatives: list[str] = []
    """Strings the answer must not match in full."""
