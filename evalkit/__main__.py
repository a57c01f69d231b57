"""`python -m evalkit` (and the `evalkit` command, `evalkit.launch`): a no-op `evalkit run` whose gate holds is
answered before the rest of evalkit is imported (`evalkit.noop_gate`); any other command records for the gate, then
runs."""

import sys

from evalkit import noop_gate

_answered = noop_gate.answer(sys.argv)
if _answered is not None:
    noop_gate.exit_now(_answered)
noop_gate.record(sys.argv)

from evalkit.cli import entry  # noqa: E402  (after the gate: a no-op it answers imports nothing more)

entry()
