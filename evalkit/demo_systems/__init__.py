"""Small real programs the demo evaluates through the `command` adapter (no model inside)."""
