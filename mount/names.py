"""File names in the mount: slugs, safe encodings of stored values, and the names of each file kind.

Pure functions, tested from tables. A name is at most NAME_MAX (255) bytes and never holds '/' or NUL.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterator

from recallfs.query.ids import is_memory_id
from recallfs.query.labels import label
from recallfs.query.records import TYPE_TO_TABLE
from recallfs.query.visible import CONTROL_PICTURES

NAME_MAX = 255
# '/' cannot appear in a file name. Stored values (tags, sessions, entities) show it as U+2215
# DIVISION SLASH, which looks the same; in recall queries both that and %2F mean '/'.
SLASH_STANDIN = "\u2215"
# A name starting with '.' is hidden, and the mount answers no lookup of one (tools probe .git, .gitignore
# and .rgignore in every directory). A stored value starting with '.' (a session ".notes", a tag ".wip")
# therefore starts with U+2024 ONE DOT LEADER instead, which looks the same.
DOT_STANDIN = "\u2024"
_PERCENT_SLASH = re.compile(r"%2f", re.I)

TABLE_SINGULAR = {table: singular for singular, table in TYPE_TO_TABLE.items()}  # "facts" -> "fact"


class NameTooLong(ValueError):
    """A name over NAME_MAX bytes."""


def slug(text: str, max_chars: int = 48, fallback: str = "memory") -> str:
    """Lower-case words joined by '-': 'Tests use nextest!' -> 'tests-use-nextest'. Never holds '--'.
    Text of symbols only ('👍') is named by their Unicode names ('thumbs-up-sign')."""
    return _joined(_words(text), max_chars) or _joined(_words(symbol_names(text)), max_chars) or fallback


def _joined(words: Iterator[str], max_chars: int) -> str:
    """The first words that fit in `max_chars`, joined by '-' (a first word too long is cut). Reads no
    further than it needs: a cold walk names every fact, and a fact can be thousands of words."""
    out = ""
    for word in words:
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > max_chars:
            return out or word[:max_chars]
        out = candidate
    return out


def slug_words(text: str) -> list[str]:
    """The words of `text`, lower-cased: letters and digits with the marks attached to them."""
    return list(_words(text))


_ASCII_WORD = re.compile(r"[A-Za-z0-9]+")


def _words(text: str) -> Iterator[str]:
    if text.isascii():  # ASCII is its own NFKC form, has no marks, and folds to itself: letters and digits
        return (m.group().lower() for m in _ASCII_WORD.finditer(text))
    return _unicode_words(text)


def _unicode_words(text: str) -> Iterator[str]:
    current = ""
    for ch in unicodedata.normalize("NFKC", text).lower():
        if ch.isalnum() or (current and unicodedata.category(ch).startswith("M")):
            current += _fold(ch)
        elif current:
            yield current
            current = ""
    if current:
        yield current


def _fold(ch: str) -> str:
    """Accents come off Latin letters (é -> e) only: elsewhere a mark is part of the letter (で is not
    て, and a Hangul syllable decomposes into jamo)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return bare if bare.isascii() and bare.isalnum() else ch


def symbol_names(text: str, category: str = "S") -> str:
    """The Unicode names of the characters of this category in `text`, each once ('👍 🎉' ->
    'THUMBS UP SIGN PARTY POPPER'; with "P", '??' -> 'QUESTION MARK')."""
    chars = dict.fromkeys(ch for ch in text if unicodedata.category(ch).startswith(category))
    return " ".join(unicodedata.name(ch, "") for ch in chars)


def describe(text: str) -> str:
    """`text` when it has words, else the names of its symbols, else of its punctuation: what a file
    name can say about it (a turn that is only '👍' or '?' is not named by its speaker alone)."""
    return text if slug_words(text) else symbol_names(text) or symbol_names(text, "P")


def fits(name: str) -> bool:
    return len(name.encode("utf-8", "surrogateescape")) <= NAME_MAX


# A control character in a label (a tag "nl\nx", an ESC) would be a file name that breaks `ls | while
# read` and `find | xargs`, or drives the terminal that lists it: it is shown as its picture (U+2400..,
# query/visible.py). NUL is dropped before, so U+2400 in a name is only ever written as such.
_CONTROLS = {picture: c for c, picture in CONTROL_PICTURES.items() if c}
# The C1 controls (U+0080..U+009F: CSI drives xterm, NEL ends a line for Python's splitlines) have no
# pictures: each shows as U+FFFD, and the name ends in the value's short hash so distinct values stay
# distinct names.
_C1_CONTROLS = {c: 0xFFFD for c in range(0x80, 0xA0)}


def encode_value(value: str, suffix: str = "") -> str:
    """A stored value (tag, kind, session, entity) as a file name (plus `suffix`, e.g. '.md').

    '/' shows as U+2215; NUL is dropped; a control character shows as its picture (a newline as U+240A,
    ESC as U+241B, DEL as U+2421) and a C1 control as U+FFFD; a leading '.' shows as U+2024 (so '.' and
    '..' are names too); "" is '_'. A value that a stand-in could be mistaken for (one that holds U+2215,
    a picture, U+FFFD or a NUL, starts with U+2024, or is '_' as written) or that holds a C1 control, and
    a name over 255 bytes (cut), end in '~' and a short hash of the value, so distinct values keep
    distinct names. The value is named in its one label form, NFC (query/labels.py)."""
    value = label(value)
    name = value.replace("/", SLASH_STANDIN).replace("\0", "").translate(CONTROL_PICTURES)
    if name.startswith("."):
        name = DOT_STANDIN + name[1:]
    if name == "":
        name = "_"
    name = name.translate(_C1_CONTROLS)
    digest = short_hash(value)
    if not _ambiguous(value) and fits(name + suffix):
        return name + suffix
    return cut_to_fit(name, digest, suffix)


def short_hash(text: str) -> str:
    """'~' and 10 hex digits of `text`'s hash: what ends a name cut to fit, so distinct texts stay distinct."""
    return "~" + hashlib.sha1(text.encode()).hexdigest()[:10]


def cut_to_fit(name: str, digest: str, suffix: str = "") -> str:
    """`name` cut at a character so that it, `digest` and `suffix` fit in NAME_MAX bytes."""
    room = NAME_MAX - len((digest + suffix).encode())
    return name.encode()[:room].decode("utf-8", "ignore") + digest + suffix


def fitted(name: str, suffix: str = "") -> str:
    """`name` + `suffix`; over NAME_MAX bytes, the rule of long names (as encode_value's): `name` is cut
    and followed by '~', a short hash of the whole `name`, and `suffix`."""
    return name + suffix if fits(name + suffix) else cut_to_fit(name, short_hash(name), suffix)


def _ambiguous(value: str) -> bool:
    """Whether `value`'s name, without a hash, could also be another value's (found 2026-12-07: a tag
    "a/b" and a tag "a∕b" as written were two directories of one name, one of them unreachable)."""
    return (value == "_" or value.startswith(DOT_STANDIN) or "\0" in value
            or any(ch == SLASH_STANDIN or ch == "\ufffd" or ord(ch) in _CONTROLS or 0x80 <= ord(ch) < 0xA0
                   for ch in value))


def decode_value(name: str, suffix: str = "") -> str | None:
    """The value `encode_value` turned into `name` (in NFC, as groupings key it), or None when the name was
    shortened or holds a control picture (ask the listing: `a␊b` names a tag "a\\nb" or one that holds
    U+240A as written)."""
    name = label(name)
    if suffix:
        if not name.endswith(suffix):
            return None
        name = name[: -len(suffix)]
    if re.search(r"~[0-9a-f]{10}$", name):  # cut, or a value a stand-in could be mistaken for: ask the listing
        return None
    if any(ord(ch) in _CONTROLS or ch == "\ufffd" for ch in name):  # a picture, or one as written: ask the listing
        return None
    if name == "_":
        name = ""
    if name.startswith(DOT_STANDIN):
        name = "." + name[1:]
    return name.replace(SLASH_STANDIN, "/")


def decode_query(name: str) -> str:
    """A recall directory name -> the query: U+2215 and %2F stand for '/'."""
    if not fits(name):
        raise NameTooLong(name)
    return _PERCENT_SLASH.sub("/", name.replace(SLASH_STANDIN, "/"))


def fact_name(content: str, mem_id: str) -> str:
    """facts/<slug>--<id>.md; the slug never holds '--', so the first '--' ends it."""
    return f"{slug(content, fallback='fact')}--{mem_id}.md"


def parse_fact_name(name: str) -> str | None:
    """The memory id in a fact file name, or None."""
    if not name.endswith(".md") or "--" not in name:
        return None
    mem_id = name[:-3].split("--", 1)[1]
    return mem_id if is_memory_id(mem_id) else None


def turn_name(seq: int | None, speaker: str | None) -> str:
    return f"{(seq or 0):04d}-{_speaker_slug(speaker or '')}.md"


@functools.lru_cache(maxsize=4096)
def _speaker_slug(speaker: str) -> str:
    """A session's few speakers name all its turns: a cold walk names ~90k turns (100k bench store)."""
    return slug(speaker, 24, fallback="turn")


def version_name(version: int, table: str | None = None) -> str:
    """history/<id>/v<n>.md; `table` only when one id names memories in two tables."""
    return f"v{version}.md" if table is None else f"v{version}-{TABLE_SINGULAR[table]}.md"


def parse_version_name(name: str) -> int | None:
    m = re.fullmatch(r"v([1-9][0-9]{0,8})(?:-(?:fact|summary|turn))?\.md", name)
    return int(m.group(1)) if m else None


def hit_name(rank: int, table: str, label: str, width: int = 2) -> str:
    """recall/<q>/NN-<table>-<slug>.md"""
    return f"{rank:0{width}d}-{TABLE_SINGULAR.get(table, table)}-{slug(label, 40)}.md"


def disambiguate(name: str, mem_id: str) -> str:
    """A second file that would take an existing name gets its id: '0003-bob.md' -> '0003-bob--t-1.md'."""
    stem, dot, ext = name.rpartition(".")
    return f"{stem}--{mem_id}.{ext}" if dot else f"{name}--{mem_id}"
