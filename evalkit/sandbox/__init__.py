"""Sandboxed execution of tests against a patched source tree (Docker, or local fallback)."""
