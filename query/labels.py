"""Labels (tags, kinds, entities, sessions, slots, speakers) compared as people read them.

"café" typed on one keyboard is U+00E9; pasted from elsewhere it can be "e" + U+0301 (NFD). The two look
the same in `ls` and in a recall filter, so a label is one label in either form: ingest stores labels in
NFC, groupings key them by NFC (a store written before keeps what it holds, and shows one directory for
both forms), and a filter matches either stored form. Content is stored as written.
"""

from __future__ import annotations

import unicodedata


def label(value: str) -> str:
    """The one form a label is stored, grouped and named in: NFC (composed), cheap for ASCII."""
    return value if value.isascii() else unicodedata.normalize("NFC", value)


def label_forms(value: str) -> list[str]:
    """The stored forms a filter for `value` matches: as typed, NFC and NFD (a store written before labels
    were normalized may hold either), each once."""
    if value.isascii():
        return [value]
    return list(dict.fromkeys((value, unicodedata.normalize("NFC", value), unicodedata.normalize("NFD", value))))
