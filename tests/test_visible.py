"""query/visible.py from tables: what XML and a terminal get in place of the characters they cannot show."""

from __future__ import annotations

import subprocess
import xml.dom.minidom
from xml.sax.saxutils import escape, quoteattr

import pytest

from recallfs.mount.names import encode_value
from recallfs.query.formats import shell_word
from recallfs.query.visible import escaped_controls, xml_chars


@pytest.mark.parametrize(("text", "shown"), [
    ("plain text, é, 漢字, 👍", "plain text, é, 漢字, 👍"),
    ("bell\x07", "bell\u2407"),
    ("\x1b[0mreset", "\u241b[0mreset"),
    ("nul\x00", "nul\u2400"),
    ("\x01\x08\x0b\x0c\x0e\x1f", "\u2401\u2408\u240b\u240c\u240e\u241f"),
    ("tab\tnl\ncr\r", "tab\tnl\ncr\r"),  # XML carries these: they stay
    ("del\x7f c1\x85\x9b", "del\x7f c1\x85\x9b"),  # allowed in XML 1.0: they stay
    ("non\ufffe\uffff", "non\ufffd\ufffd"),  # noncharacters XML forbids, with no picture
    ("lone\ud800", "lone\ufffd"),  # a surrogate a bad file name brought in
    ("\ufffd\U0010fffd\ue000", "\ufffd\U0010fffd\ue000"),  # the edges XML allows
    ("<&>\"'", "<&>\"'"),  # escaping is the writer's (escape, quoteattr)
])
def test_xml_chars(text: str, shown: str) -> None:
    assert xml_chars(text) == shown
    xml.dom.minidom.parseString(f"<a b={quoteattr(xml_chars(text))}>{escape(xml_chars(text))}</a>")


def test_xml_and_file_names_show_a_control_by_the_same_picture() -> None:
    for c in [*range(1, 0x20)]:
        if chr(c) not in "\t\n\r":
            assert xml_chars(f"a{chr(c)}b") == encode_value(f"a{chr(c)}b")


@pytest.mark.parametrize(("text", "shown"), [
    ("plain, é, 👍", "plain, é, 👍"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("bell\x07", "bell\\x07"),
    ("nul\x00 del\x7f csi\x9b nel\x85", "nul\\x00 del\\x7f csi\\x9b nel\\x85"),
    ("cr\r vt\x0b us\x1f", "cr\\r vt\\x0b us\\x1f"),
    ("tab\tnl\n", "tab\tnl\n"),  # layout: text wraps them as spaces
    ("non\ufffe", "non\ufffe"),  # not a control: a terminal shows it
    # bidi controls reorder what a terminal shows (found 2026-12-07: U+202E reached it raw)
    ("pay \u202eusd 001\u202c now", "pay \\u202eusd 001\\u202c now"),
    ("\u2066a\u2069 \u200f \u061c", "\\u2066a\\u2069 \\u200f \\u061c"),
])
def test_escaped_controls(text: str, shown: str) -> None:
    assert escaped_controls(text) == shown


@pytest.mark.parametrize("text", ["plain words", "it's", "-deploy", "ci \x1b[31mred", "bell\x07 and\ttab",
                                  "nel\x85 back\\slash 'q'", "del\x7fa", "caf\u00e9 \u2215 ok"])
def test_a_shell_word_means_its_text_to_bash_and_holds_no_control_character(text):
    """Found 2026-12-07: the next-page command for a query holding ESC showed U+241B, a different query."""
    word = shell_word(text)
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0 for ch in word), word
    out = subprocess.run(["bash", "-c", f'printf "%s" {word}'], capture_output=True, text=True, check=True).stdout
    assert out == text
