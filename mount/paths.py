"""The path grammar of the mount: an ordered route table from path components to node kinds.

Pure: `resolve(("facts", "by-kind", "decision"))` -> Match(Kind.KIND, {"kind_name": "decision"}).
The first route whose pattern matches wins, so literals are listed before placeholders at one level.
Whether the named memory exists (and may be read) is the store's question, not the grammar's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum

from recallfs.mount.names import (
    NameTooLong,
    decode_query,
    fits,
    parse_fact_name,
    parse_version_name,
)
from recallfs.query.ids import is_memory_id

RESULTS_DIR = ".results"  # recall/.results/<query>/ holds the result directories the links point at
TRUNCATED_NAME = "_truncated.md"  # in a listing cut at max_rows: says so, and how to see the rest


class Kind(StrEnum):
    ROOT = "root"
    INDEX = "index"
    FACTS = "facts"
    FACT = "fact"
    KINDS = "kinds"
    KIND = "kind"
    TAGS = "tags"
    TAG = "tag"
    SESSIONS = "sessions"
    SESSION = "session"
    SUMMARY = "summary"
    TRANSCRIPT = "transcript"
    TURNS = "turns"
    TURN = "turn"
    ENTITIES = "entities"
    ENTITY = "entity"
    HISTORY = "history"
    VERSIONS = "versions"
    VERSION = "version"
    RECALL = "recall"
    RECALL_README = "recall_readme"
    RESULTS = "results"
    QUERY_LINK = "query_link"
    QUERY = "query"
    HIT = "hit"
    RESULTS_JSON = "results_json"
    CONTEXT_XML = "context_xml"
    TRUNCATED = "truncated"
    INBOX = "inbox"  # where a file written becomes a memory; its own file system is mounted over it


@dataclass(frozen=True, slots=True)
class KindInfo:
    """What a kind of node is, beyond the routes that name it. (Whether a node is a directory, a file or
    a link is said by its entry: content for a file, a target for a link.)"""

    fixed: bool = False  # a directory with a fixed name: pinned in the inode table, looked up without the store
    truncatable: bool = False  # listed from the store and cut at max_rows (then it holds _truncated.md)
    batch_key: str | None = None  # listed in one content load with its siblings, which differ in this param
    direct: bool = False  # a name of this kind resolves on its own, without its directory's listing
    recall: bool = False  # part of a recall result: the kernel caches it for recall_ttl_s only


_PLAIN = KindInfo()
_FIXED = KindInfo(fixed=True)
_FIXED_LIST = KindInfo(fixed=True, truncatable=True)
_RECALL_FILE = KindInfo(recall=True)
KINDS: dict[Kind, KindInfo] = {
    Kind.ROOT: _FIXED,
    Kind.INDEX: _PLAIN,
    Kind.FACTS: _FIXED_LIST,
    Kind.FACT: KindInfo(direct=True),
    Kind.KINDS: _FIXED_LIST,
    Kind.KIND: KindInfo(truncatable=True, direct=True),
    Kind.TAGS: _FIXED_LIST,
    Kind.TAG: KindInfo(truncatable=True, direct=True),
    Kind.SESSIONS: _FIXED_LIST,
    Kind.SESSION: KindInfo(batch_key="session", direct=True),
    Kind.SUMMARY: _PLAIN,
    Kind.TRANSCRIPT: _PLAIN,
    Kind.TURNS: KindInfo(truncatable=True, batch_key="session"),
    Kind.TURN: KindInfo(direct=True),  # turns/ is cut at max_rows; every turn still opens by name
    Kind.ENTITIES: _FIXED_LIST,
    Kind.ENTITY: KindInfo(direct=True),
    Kind.HISTORY: _FIXED_LIST,
    Kind.VERSIONS: KindInfo(truncatable=True, batch_key="id", direct=True),
    Kind.VERSION: _PLAIN,
    Kind.RECALL: _FIXED,
    Kind.RECALL_README: _PLAIN,
    Kind.RESULTS: _FIXED,
    Kind.QUERY_LINK: _PLAIN,  # a symlink (its entry has a target)
    Kind.QUERY: KindInfo(recall=True),
    Kind.HIT: _RECALL_FILE,
    Kind.RESULTS_JSON: _RECALL_FILE,
    Kind.CONTEXT_XML: _RECALL_FILE,
    Kind.TRUNCATED: _PLAIN,
    Kind.INBOX: _FIXED,
}
# batch key -> the kinds one sibling batch lists (history/<id>/; sessions/<s>/ with its turns/)
BATCHES: dict[str, tuple[Kind, ...]] = {
    key: tuple(kind for kind, info in KINDS.items() if info.batch_key == key)
    for key in sorted({info.batch_key for info in KINDS.values() if info.batch_key is not None})
}

Params = dict[str, str | int]


def _visible(name: str) -> bool:
    # Hidden names are never memories: tools probe for .git, .gitignore, .rgignore in every directory.
    return not name.startswith(".")


def _fact(name: str) -> Params | None:
    mem_id = parse_fact_name(name)
    return {"id": mem_id} if mem_id else None


def _value(key: str, suffix: str = "") -> Callable[[str], Params | None]:
    def parse(name: str) -> Params | None:
        if suffix and not name.endswith(suffix):
            return None
        return {key: name}
    return parse


def _memory_id(name: str) -> Params | None:
    return {"id": name} if is_memory_id(name) else None


def _version(name: str) -> Params | None:
    n = parse_version_name(name)
    return {"version": n} if n is not None else None


def _turn(name: str) -> Params | None:
    m = re.fullmatch(r"([0-9]{4,})-.+\.md", name)
    return {"turn_name": name, "seq": int(m.group(1))} if m else None


def _query(name: str) -> Params | None:
    if not _visible(name):
        return None
    return {"query": decode_query(name)}


def _hit(name: str) -> Params | None:
    m = re.fullmatch(r"([0-9]{2,})-(fact|summary|turn|entity)-.*\.md", name)
    return {"rank": int(m.group(1))} if m else None


PLACEHOLDERS: dict[str, Callable[[str], Params | None]] = {
    "{fact}": _fact,
    "{kind}": _value("kind_name"),
    "{tag}": _value("tag_name"),
    "{session}": _value("session_name"),
    "{turn}": _turn,
    "{entity}": _value("entity_name", ".md"),
    "{id}": _memory_id,
    "{version}": _version,
    "{query}": _query,
    "{hit}": _hit,
}


@dataclass(frozen=True, slots=True)
class Route:
    pattern: tuple[str, ...]
    kind: Kind


@dataclass(frozen=True, slots=True)
class Match:
    kind: Kind
    params: Params = field(default_factory=dict)


ROUTES: tuple[Route, ...] = (
    Route((), Kind.ROOT),
    Route(("index.md",), Kind.INDEX),
    Route(("facts",), Kind.FACTS),
    Route(("facts", "by-kind"), Kind.KINDS),
    Route(("facts", "by-kind", "{kind}"), Kind.KIND),
    Route(("facts", "by-kind", "{kind}", "{fact}"), Kind.FACT),
    Route(("facts", "by-tag"), Kind.TAGS),
    Route(("facts", "by-tag", "{tag}"), Kind.TAG),
    Route(("facts", "by-tag", "{tag}", "{fact}"), Kind.FACT),
    Route(("facts", "{fact}"), Kind.FACT),
    Route(("sessions",), Kind.SESSIONS),
    Route(("sessions", "{session}"), Kind.SESSION),
    Route(("sessions", "{session}", "summary.md"), Kind.SUMMARY),
    Route(("sessions", "{session}", "transcript.md"), Kind.TRANSCRIPT),
    Route(("sessions", "{session}", "turns"), Kind.TURNS),
    Route(("sessions", "{session}", "turns", "{turn}"), Kind.TURN),
    Route(("entities",), Kind.ENTITIES),
    Route(("entities", "{entity}"), Kind.ENTITY),
    Route(("history",), Kind.HISTORY),
    Route(("history", "{id}"), Kind.VERSIONS),
    Route(("history", "{id}", "{version}"), Kind.VERSION),
    Route(("recall",), Kind.RECALL),
    Route(("recall", RESULTS_DIR), Kind.RESULTS),
    Route(("recall", RESULTS_DIR, "{query}"), Kind.QUERY),
    Route(("recall", RESULTS_DIR, "{query}", "results.json"), Kind.RESULTS_JSON),
    Route(("recall", RESULTS_DIR, "{query}", "context.xml"), Kind.CONTEXT_XML),
    Route(("recall", RESULTS_DIR, "{query}", "{hit}"), Kind.HIT),
    Route(("recall", "README.md"), Kind.RECALL_README),  # what recall/ is (mount/recall_readme.py)
    Route(("recall", "{query}"), Kind.QUERY_LINK),
    Route(("inbox",), Kind.INBOX),
)


def _match_route(route: Route, parts: tuple[str, ...]) -> Params | None:
    if len(route.pattern) != len(parts):
        return None
    params: Params = {}
    for pattern, part in zip(route.pattern, parts, strict=True):
        parser = PLACEHOLDERS.get(pattern)
        if parser is None:
            if pattern != part:
                return None
            continue
        if pattern not in ("{query}",) and not _visible(part):
            return None
        got = parser(part)
        if got is None:
            return None
        params.update(got)
    return params


def _by_head(routes: tuple[Route, ...]) -> dict[tuple[int, str], tuple[Route, ...]]:
    """Routes by (length, first component), in their order. Every route but the root's starts with a
    fixed name, so only the routes of one bucket can match a path (tests/test_mount_paths.py)."""
    heads: dict[tuple[int, str], list[Route]] = {}
    for route in routes:
        if route.pattern:
            heads.setdefault((len(route.pattern), route.pattern[0]), []).append(route)
    return {head: tuple(found) for head, found in heads.items()}


_BY_HEAD = _by_head(ROUTES)


def candidates(parts: tuple[str, ...]) -> tuple[Route, ...]:
    """The routes that may match `parts`: rg and git probe .gitignore, .ignore, .rgignore and .git in every
    directory, so a lookup should not try all ~30 routes."""
    if not parts:
        return ROUTES[:1]
    return _BY_HEAD.get((len(parts), parts[0]), ())


def resolve(parts: tuple[str, ...]) -> Match | None:
    """The node kind a path names, with what the path says about it; None when it names nothing.

    Raises NameTooLong when a component is over 255 bytes (ENAMETOOLONG)."""
    for part in parts:
        if not fits(part):
            raise NameTooLong(part)
    if parts and parts[-1] == TRUNCATED_NAME:
        parent = resolve(parts[:-1])
        return Match(Kind.TRUNCATED) if parent is not None and KINDS[parent.kind].truncatable else None
    for route in candidates(parts):
        params = _match_route(route, parts)
        if params is not None:
            return Match(route.kind, params)
    return None
