"""Adapters that run a system under test on a case."""
