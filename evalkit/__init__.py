"""evalkit: an evaluation repository for AI coding assistants."""

__version__ = "0.1.0"
