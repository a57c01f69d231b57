"""Importers: turn other benchmarks' task files into evalkit suites (`evalkit import <source> ...`)."""
