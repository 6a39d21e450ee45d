"""The entity card: the entity a query names exactly, shown before the ranked hits, with its current
facts the principal may read; and how it is fitted beside a page of hits (no fact twice, budget:N)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb

from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import by_generation, store_state
from recallfs.query.store import Store
from recallfs.ranking.entity_match import match_entity
from recallfs.ranking.text import estimate_tokens, words

log = logging.getLogger("recallfs.shaping")

ENTITY_CARD_FACTS = 20  # facts shown on an entity card; the rest are in entities/<name>.md
MAX_ENTITY_WORDS = 8  # longer queries are not looked up as entity names


@dataclass(slots=True)
class EntityCard:
    """The entity a query names exactly, shown before the ranked hits (alpha-recall's exact match)."""

    name: str
    facts: list[dict[str, Any]] = field(default_factory=list)  # current, authorized, newest first
    total_facts: int = 0

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "total_facts": self.total_facts, "facts": self.facts}


_ENTITY_NAMES: LruCache[tuple[Any, ...], list[str]] = LruCache(256, generation=by_generation)


def entity_names(cur: Cursor, schema: str, store: Store | None = None) -> list[str]:
    """Every entity named by a fact in the partition. Unscoped, so never shown as such: a name only
    leads to a card through `entity_card`, whose query carries the scope clause. Cached per store
    generation when the store is given."""
    def compute() -> list[str]:
        rows = cur.execute(f"SELECT DISTINCT entity FROM {schema}.facts WHERE entity IS NOT NULL").fetchall()
        return [str(r[0]) for r in rows]

    if store is None:
        return compute()
    names: list[str] = _ENTITY_NAMES.get_or_compute((str(store.path), *store_state(store), schema), compute)
    return names


def entity_card(
    cur: Cursor, schema: str, query_text: str, where: str, params: list[object],
    store: Store | None = None,
) -> EntityCard | None:
    """The card of the entity the query names exactly, or None: also when none of its facts is
    current and readable by this principal (a denied entity is absent), and when the lookup fails
    (the card is an extra; recall never fails for it)."""
    if not 0 < len(words(query_text)) <= MAX_ENTITY_WORDS:
        return None  # an exact match needs the whole query to be a name: a sentence never is
    try:
        names = entity_names(cur, schema, store)
        name = match_entity(query_text, names)
        if name is None:
            return None
        spellings = [n for n in names if words(n) == words(name)]  # "Maya" and "maya" are one entity
        # No windowed count over the whole result for the total: over the scope clause's semi-join on
        # `heads`, DuckDB 1.5.5 intermittently fails with an internal error that invalidates the
        # database (developer-notes/concurrency.md). A second count only runs when the page is full.
        match = f"m.entity IN ({', '.join('?' * len(spellings))}) AND {where}"
        rows = cur.execute(
            f"""SELECT m.id, m.kind, m.content, m.created_at, m.version, m.tags FROM {schema}.facts m
                WHERE {match} ORDER BY m.created_at DESC, m.id LIMIT ?""",
            [*spellings, *params, ENTITY_CARD_FACTS],
        ).fetchall()
        total = len(rows)
        if total == ENTITY_CARD_FACTS:
            count = cur.execute(f"SELECT count(*) FROM {schema}.facts m WHERE {match}", [*spellings, *params])
            row = count.fetchone()  # a count answers one row
            total = int(row[0]) if row else total
    except duckdb.Error:
        log.exception("entity lookup failed in %s", schema)
        return None
    if not rows:
        return None
    facts = [
        {"id": r[0], "kind": r[1], "content": r[2], "created_at": r[3].isoformat() if r[3] else None,
         "version": r[4], "tags": list(r[5] or [])}
        for r in rows
    ]
    return EntityCard(name=name, facts=facts, total_facts=total)


def fit_card(
    card: EntityCard | None, hits: Sequence[tuple[str, int, str]], budget: int | None
) -> tuple[EntityCard | None, list[str]]:
    """The card as returned beside this page of hits ((id, rank, content) each), and notes.

    Nothing is returned twice: a card fact that is a hit keeps its place on the card as a reference to
    the hit's rank, without its text. `budget:N` covers everything returned: the hits were chosen
    within it first (they are ranked), and the card's facts take what is left, in card order; those
    that do not fit are dropped and the note says how many. None when nothing of the card is left."""
    if card is None:
        return None, []
    ranks = {mem_id: rank for mem_id, rank, _ in hits}
    left = None if budget is None else budget - sum(estimate_tokens(text) for _, _, text in hits)
    facts: list[dict[str, Any]] = []
    dropped = 0
    for fact in card.facts:
        rank = ranks.get(fact["id"])
        if rank is not None:
            facts.append({k: v for k, v in fact.items() if k != "content"} | {"hit": rank})
        elif left is None or estimate_tokens(fact["content"]) <= left:
            left = None if left is None else left - estimate_tokens(fact["content"])
            facts.append(fact)
        else:
            dropped += 1
    notes = []
    if dropped:
        notes.append(f"budget {budget} tokens: the entity card of {card.name} kept {len(facts)} of "
                     f"{len(card.facts)} facts (the hits came first)")
    if not facts:
        return None, notes
    return EntityCard(name=card.name, facts=facts, total_facts=card.total_facts), notes
