"""Which turns and summaries yield to which current fact: the store side of ranking/currentness.py.

Derived from the facts table and `heads` once per store generation (an ingest is what changes it), so
a recall pays only for a dictionary lookup per candidate. Two links (ranking/currentness.py says what
the stage does with them):

- evidence: a current turn or summary cited in the `refs` of a fact row that is not current, and cited
  by no current fact. It yields to the fact that replaced that row: the current version of the same
  id, else the head of its supersession chain, else the current fact of its slot (none: deleted).
- session: a current turn or summary of a conversation in which a fact of a changing attribute was
  recorded (the fact's `session`, or the sessions of the turns it cites), for the attribute's current
  fact. An attribute changes when one of its rows is not current and something replaced it.

Scope: every link is checked against the caller's principal before it is used (`links_for`): the
current fact must pass the gate with the request's filters, and a stale fact named in a mark must be
readable by the principal's policy; a link that fails either is as if it did not exist.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from recallfs.query.caches import LruCache
from recallfs.query.currentness import MAX_CHAIN, FactState, chain_head, fact_links
from recallfs.query.cursor import Cursor
from recallfs.query.derived import allowed_rids, by_generation, store_state
from recallfs.query.gate import authorize_in_store, scope_clause
from recallfs.query.labels import label
from recallfs.query.loading import pull_in
from recallfs.query.query_syntax import RecallOptions
from recallfs.query.readable import Row
from recallfs.query.recall_scope import Scope, Trace
from recallfs.query.store import Store
from recallfs.ranking.candidates import Candidate
from recallfs.ranking.currentness import EVIDENCE, PULLED, SESSION, CurrentLink
from recallfs.scope.principal import Principal

log = logging.getLogger("recallfs.recall")

Located = dict[str, list[tuple[int, str | None]]]  # a column's value -> [(rid, session)]
_FACT_COLUMNS = "rid, id, version, status, slot, supersedes, superseded_by, created_at, refs, session"


@dataclass(frozen=True, slots=True)
class _Fact:
    rid: int
    id: str
    version: int
    status: str
    slot: str | None
    supersedes: str | None
    superseded_by: str | None
    created_at: datetime | None
    refs: tuple[str, ...]
    session: str | None


@dataclass(slots=True)
class Derived:
    """target rid -> its links, each with the rid of the stale fact row it names (None: session link)."""

    links: dict[int, list[tuple[CurrentLink, int | None]]] = field(default_factory=dict)

    def add(self, rid: int, link: CurrentLink, stale_rid: int | None) -> None:
        self.links.setdefault(rid, []).append((link, stale_rid))


class _Replacements:
    """Which current fact row replaced a fact id (None: nothing did, it is gone)."""

    def __init__(self, facts: Sequence[_Fact], heads: set[int]) -> None:
        self.head_of_id = {f.id: f for f in facts if f.rid in heads}
        latest: dict[str, _Fact] = {}
        for f in facts:
            if f.id not in latest or f.version > latest[f.id].version:
                latest[f.id] = f
        self.latest = latest
        states = {i: FactState(i, f.status, f.supersedes, f.superseded_by, f.created_at, f.version, f.rid)
                  for i, f in latest.items()}
        self.links = fact_links(states)
        self.rank = {i: s.newness() for i, s in states.items()}
        self.slot_head = {label(f.slot): f for f in self.head_of_id.values() if f.slot}  # one slot in either form

    def of(self, fid: str, depth: int = 0) -> _Fact | None:
        if fid in self.head_of_id:
            return self.head_of_id[fid]
        if depth < 4 and fid in self.links:
            head, _ = chain_head(self.links, fid, MAX_CHAIN, self.rank)
            if head != fid:
                return self.of(head, depth + 1)
        slot = self.latest[fid].slot if fid in self.latest else None
        return self.slot_head.get(label(slot)) if slot else None


def derive(cur: Cursor, schema: str) -> Derived:
    """Every link of the partition (see the module docstring)."""
    # A partition whose every fact row is a head has no link: asked first, so that the common case (no
    # fact replaced) does not read and build every fact, about 80 ms at 30k facts after each write.
    if not cur.scalar(f"SELECT count(*) FROM {schema}.facts WHERE rid NOT IN (SELECT rid FROM {schema}.heads)"):
        return Derived()
    facts = [_Fact(int(r[0]), str(r[1]), int(r[2]), str(r[3]), r[4], r[5], r[6], r[7],
                   tuple(str(x) for x in (r[8] or ())), r[9])
             for r in cur.execute(f"SELECT {_FACT_COLUMNS} FROM {schema}.facts ORDER BY created_at, rid").fetchall()]
    heads = {int(r[0]) for r in cur.execute(f"SELECT rid FROM {schema}.heads").fetchall()}
    out = Derived()
    stale = [f for f in facts if f.rid not in heads]
    if not stale:
        return out
    replaced = _Replacements(facts, heads)
    current_refs = {ref for f in facts if f.rid in heads for ref in f.refs}
    pairs = [(f, replaced.of(f.id)) for f in stale]
    cited = _current_rows(cur, schema, "source_id", {ref for f in stale for ref in f.refs})
    for f, head in pairs:  # oldest first: a later citation wins
        link = CurrentLink(EVIDENCE, head.rid if head else None, head.id if head else None, f.id)
        for ref in f.refs:
            if ref not in current_refs:
                for rid, _ in cited.get(ref, ()):
                    out.links[rid] = [(link, f.rid)]
    _session_links(cur, schema, out, [(f, h) for f, h in pairs if h is not None], cited)
    return out


def _session_links(cur: Cursor, schema: str, out: Derived, pairs: Sequence[tuple[_Fact, _Fact]],
                   cited: Located) -> None:
    """Session links for the conversations of every changing attribute's facts (stale and current)."""
    ref_sessions = _current_rows(cur, schema, "source_id", {r for _, h in pairs for r in h.refs})
    covers: dict[str, dict[int, _Fact]] = {}
    for f, head in pairs:
        for fact, rows in ((f, cited), (head, ref_sessions)):
            sessions = {fact.session} | {s for ref in fact.refs for _, s in rows.get(ref, ())}
            for session in sessions - {None}:
                covers.setdefault(str(session), {})[head.rid] = head
    by_session = _current_rows(cur, schema, "session", set(covers))
    for session, heads in covers.items():
        for rid, _ in by_session.get(session, ()):
            if rid in out.links and out.links[rid][0][0].link == EVIDENCE:
                continue
            for head in heads.values():
                out.add(rid, CurrentLink(SESSION, head.rid, head.id), None)


def _current_rows(cur: Cursor, schema: str, column: str, values: Iterable[str]) -> Located:
    """value of `column` -> [(rid, session)] of the current turns and summaries holding it."""
    wanted = sorted(set(values))
    out: Located = {}
    if not wanted:
        return out
    for table in ("turns", "summaries"):
        rows = cur.execute(
            f"""SELECT m.{column}, m.rid, m.session FROM {schema}.{table} m
                WHERE m.{column} IN (SELECT unnest(?::VARCHAR[])) AND m.rid IN (SELECT rid FROM {schema}.heads)""",
            [wanted],
        ).fetchall()
        for value, rid, session in rows:
            out.setdefault(str(value), []).append((int(rid), session))
    return out


_DERIVED: LruCache[tuple[Any, ...], Derived] = LruCache(256, generation=by_generation)


def derived(store: Store, schema: str) -> Derived:
    """`derive`, once per store generation."""
    return _DERIVED.get_or_compute((str(store.path), *store_state(store), schema),
                                   lambda: derive(store.cursor(), schema))


def links_for(
    store: Store, principal: Principal, schema: str, rids: Iterable[int], options: RecallOptions,
) -> dict[int, list[CurrentLink]]:
    """The links of these candidates that this principal may act on (see Scope in the docstring)."""
    table = derived(store, schema).links
    mine = {rid: table[rid] for rid in rids if rid in table}
    if not mine:
        return {}
    current = {link.current_rid for links in mine.values() for link, _ in links if link.current_rid is not None}
    readable_current = authorize_in_store(store, principal, schema, "facts", current)
    shown = authorize_in_store(store, principal, schema, "facts", readable_current, options)
    where, params = scope_clause(principal, schema, None, current_only=False)
    readable = allowed_rids(store, schema, "facts", where, params)
    # A fact that only a row hidden from this reader replaced is current for it (query/reader_heads.py):
    # its citing turns are not stale either.
    still_current = authorize_in_store(
        store, principal, schema, "facts", {s for links in mine.values() for _, s in links if s is not None})
    out: dict[int, list[CurrentLink]] = {}
    for rid, links in mine.items():
        kept = [_as_shown(link, shown) for link, stale_rid in links
                if (stale_rid is None or (bool(np.isin(stale_rid, readable)) and stale_rid not in still_current))
                and (link.current_rid is None or link.current_rid in readable_current)]
        if kept:
            out[rid] = kept
    return out


def _as_shown(link: CurrentLink, shown: set[int]) -> CurrentLink:
    """A link whose current fact the request's filters leave out (`kind:turn`, `until:`) still marks its
    stale memory (the reader may read that fact: its policy passed it), but neither pulls the fact into
    the page nor moves the memory (found 2026-12-07: the mark was dropped, so a turns-only or dated
    question showed a replaced decision unflagged)."""
    if link.current_rid is None or link.current_rid in shown:
        return link
    return dataclasses.replace(link, current_rid=None, filtered=True)


def current_links(
    scope: Scope, principal: Principal, cands: list[Candidate], rows: dict[int, Row], options: RecallOptions,
    trace: Trace,
) -> dict[int, list[CurrentLink]]:
    """recall()'s currentness step: the links of the turns and summaries among the candidates. A current
    fact whose stale evidence matched is the answer: it joins `cands` (its light row joins `rows`; it
    was never scored by an arm) when no arm found it, and the stage lifts it or drops it."""
    def step() -> dict[int, list[CurrentLink]]:
        links = links_for(scope.store, principal, scope.schema, [c.rid for c in cands if c.table != "facts"],
                          options)
        have = {c.rid for c in cands}
        pull = sorted({link.current_rid for ls in links.values() for link in ls
                       if link.link == EVIDENCE and link.current_rid is not None} - have)
        pull_in(scope, "facts", pull, PULLED, cands, rows)
        return links
    try:
        return trace.timed("currentness", step)
    except Exception as exc:  # an extra: without the links the fused order stands, recall never fails
        log.exception("currentness links failed")
        trace.notes.append(f"currentness links unavailable ({type(exc).__name__}); stale turns are not marked")
        return {}
