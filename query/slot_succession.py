"""Which fact in a slot replaced which: the newest takes the slot, from the facts its author may read.

A slot (`db.host`) holds one current fact, the newest. But a fact only replaces the older facts of its
slot that its author may read (found 2026-12-07 on a `--map-uid` mount). Otherwise a writer could retire
a memory its policy hides by guessing its slot's name, and the inbox's former defence (dropping such a
slot from the writer's record) told the writer the slot held a hidden fact: its file lost the `slot:` it
wrote, and the visible fact it meant to replace stayed current beside it, unlike a store that never held
the hidden one. Now the writer's fact keeps its slot and replaces what the writer sees; whoever may read
the hidden fact too sees both current (two agents, each setting the slot from what it could see), and a
later write by an author who sees both replaces both.

`Blind` pairs (author, rid) where the author's read policy hides the row and the author has a fact of its
own in that slot, no older. They are worked out from the stored policies, one query per author of slot
facts (an author may be blind to its own, by a kind or tag its stored policy denies); most partitions have
none, and then the slot's order alone decides, in SQL, as before.
`slot_successors` is pure, tested from a table. A write works its pairs out inside its transaction
(`blind_pairs`); readers of the committed store share them once per store generation (`committed_blind`).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass
from datetime import datetime

from recallfs.query.caches import LruCache
from recallfs.query.cursor import Cursor
from recallfs.query.derived import by_generation, store_state
from recallfs.query.labels import label
from recallfs.query.store import Store
from recallfs.scope.predicate import POLICY_TABLE, policy_predicate
from recallfs.scope.principal import Principal, ScopeError


@dataclass(frozen=True, slots=True)
class Blind:
    """(author, rid) pairs where the author's read policy hides a slot fact that one of its own facts in
    the same slot could replace, and those slots (NFC). Empty in most partitions."""

    pairs: frozenset[tuple[str, int]] = frozenset()
    slots: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.pairs)

    def __contains__(self, pair: object) -> bool:
        return pair in self.pairs


NOT_BLIND = Blind()


@dataclass(frozen=True, slots=True)
class SlotMember:
    """The live head of one fact that holds a slot."""

    rid: int
    slot: str
    author: str
    created_at: datetime
    version: int = 1

    def order(self) -> tuple[datetime, int, int]:
        return (self.created_at, self.version, self.rid)


def slot_successors(members: Iterable[SlotMember], blind: Container[tuple[str, int]] = NOT_BLIND) -> dict[int, int]:
    """older rid -> the first newer member of its slot whose author may read it (one slot in either
    Unicode form). A member with no such successor is current."""
    slots: dict[str, list[SlotMember]] = {}
    for member in members:
        slots.setdefault(label(member.slot), []).append(member)
    out: dict[int, int] = {}
    for group in slots.values():
        group.sort(key=SlotMember.order)
        for i, older in enumerate(group):
            newer = next((n for n in group[i + 1:] if (n.author, older.rid) not in blind), None)
            if newer is not None:
                out[older.rid] = newer.rid
    return out


def blind_pairs(cur: Cursor, schema: str) -> Blind:
    """The partition's `Blind`: for each author of slot facts, the slot facts its read policy hides and
    that a fact of its own in the same slot, no older, could otherwise replace."""
    authors = cur.execute(
        f"SELECT DISTINCT org, workspace, agent FROM {schema}.facts WHERE slot IS NOT NULL").fetchall()
    if not authors:
        return NOT_BLIND
    org, workspace = authors[0][0], authors[0][1]
    if cur.execute(f"SELECT 1 FROM {POLICY_TABLE} WHERE org = ? AND workspace = ? LIMIT 1",
                   [org, workspace]).fetchone() is None and cur.execute(
            f"SELECT 1 FROM {schema}.facts WHERE slot IS NOT NULL AND visibility <> 'workspace' LIMIT 1"
    ).fetchone() is None:  # the default policy hides only other authors' private rows
        return NOT_BLIND
    # With a stored policy even a lone author may be blind to its own facts (a tag or kind it denies)
    pairs: set[tuple[str, int]] = set()
    slots: set[str] = set()
    for org, workspace, agent in authors:
        try:
            author = Principal(str(org), str(workspace), str(agent))
        except ScopeError:  # a name no principal can have: nobody writes as it through a policy
            continue
        policy, params = policy_predicate(author, "m")
        for rid, slot in cur.execute(
            f"""SELECT m.rid, m.slot FROM {schema}.facts m
                WHERE m.slot IS NOT NULL AND NOT coalesce({policy}, false) AND EXISTS (
                    SELECT 1 FROM {schema}.facts n WHERE n.agent = ? AND n.slot IS NOT NULL
                    AND nfc_normalize(n.slot) = nfc_normalize(m.slot) AND n.created_at >= m.created_at)""",
            [*params, author.agent]).fetchall():
            pairs.add((author.agent, int(rid)))
            slots.add(label(str(slot)))
    return Blind(frozenset(pairs), frozenset(slots))


_COMMITTED: LruCache[tuple[object, ...], Blind] = LruCache(64, generation=by_generation)


def committed_blind(store: Store, schema: str) -> Blind:
    """`blind_pairs` of the committed store, once per store generation: the partition's links and every
    reader's heads ask for the same answer (it depends on the slot facts and the policies alone)."""
    return _COMMITTED.get_or_compute((str(store.path), *store_state(store), schema),
                                     lambda: blind_pairs(store.cursor(), schema))
