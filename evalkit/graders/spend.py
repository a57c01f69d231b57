"""What every model-graded outcome records about the calls behind it (the model is in evalkit.outcomes)."""

from evalkit.outcomes import GraderSpend

__all__ = ["GraderSpend"]
