"""Stored text shown where raw control characters break things: file names, XML, a terminal.

One rule for all of them: a C0 control (U+0000..U+001F) shows as its Unicode control picture
(U+2400 + c: ESC as U+241B, a newline as U+240A) and DEL as U+2421. The mount names files by it
(mount/names.py); context.xml and `recallfs recall --format context` write text by it (query/formats.py).
"""

from __future__ import annotations

import re

CONTROL_PICTURES: dict[int, int] = {**{c: 0x2400 + c for c in range(0x20)}, 0x7F: 0x2421}

# What XML 1.0 cannot carry, not even as &#...;: C0 controls but tab, LF and CR; surrogates; U+FFFE, U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_standin(m: re.Match[str]) -> str:
    c = ord(m.group())
    return chr(CONTROL_PICTURES.get(c, 0xFFFD))  # no picture (a surrogate, U+FFFE/U+FFFF): U+FFFD


def xml_chars(text: str) -> str:
    """`text` with every character XML 1.0 forbids replaced by a visible stand-in: a C0 control by its
    picture, anything else by U+FFFD. Tab, newline and CR stay. Escaping (&, <) is the writer's."""
    return _NOT_XML.sub(_xml_standin, text)


# What a terminal obeys rather than shows: C0 controls (ESC starts a sequence, BEL rings), DEL, C1 (CSI),
# and the bidirectional controls (U+202E turns the rest of a line around: a memory could make its text
# read as something else, as "Trojan Source" does to code). Tab and newline are layout, and text wraps
# them as spaces anyway.
_TERMINAL_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escaped_controls(text: str) -> str:
    """`text` with each control character a terminal would obey written as Python writes it in a repr
    (ESC as \\x1b), as `recallfs recall` already shows the query."""
    return _TERMINAL_CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
