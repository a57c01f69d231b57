"""Per-case metrics and the one registry of metric metadata."""
