"""The `evalkit` console script: exactly `python -m evalkit` (`evalkit/__main__.py`), whose no-op gate must come
before evalkit's imports, which a console script's `from evalkit.cli import entry` would do first."""

import runpy


def entry() -> None:
    runpy.run_module("evalkit", run_name="__main__", alter_sys=True)
