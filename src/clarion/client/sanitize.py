"""`safe`: the one gate between text that came from an agent or a client and the terminal.

Agent text, question prompts, option labels, task titles, answers and server messages can carry
terminal escape sequences (clear screen, set the window title, colours, cursor moves) or
bidirectional overrides that reorder what a person reads. Every CLI renderer passes such text
through `safe`, which keeps newlines and tabs and shows every other control character as a
visible escape (`\\x1b`), so it is printed, never obeyed.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional embedding,
# override and isolate characters.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe(value: Any) -> str:
    """`value` as text with every control character neutralised (newline and tab kept)."""
    return _UNSAFE.sub(_visible, str(value))
