"""Text from a case or a system under test made safe for a terminal: no escape or control sequences."""

from __future__ import annotations

import re

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), other two-byte escapes, 8-bit CSI/OSC, then any other
# C0/C1 control character but tab and newline.
_SEQUENCES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[P^_][^\x1b]*(?:\x1b\\)?"
                        r"|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\x9c]*[\x07\x9c]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (tab and newline kept; a carriage
    return dropped, so a line cannot be overwritten)."""
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))
