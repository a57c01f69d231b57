"""Picks the newest release of a product."""
from distutils.version import LooseVersion


def newest(versions):
    return max(versions, key=LooseVersion)
