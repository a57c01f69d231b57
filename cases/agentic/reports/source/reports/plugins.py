"""Loads pricing plugins from Python files."""
import imp


def load_plugin(path):
    module = imp.load_source("pricing_plugin", path)
    return module.price
