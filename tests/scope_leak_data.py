"""The leak tests' memories: who may read what, written down by hand (not computed by the code under test).

Workspace acme/proj has three readers: atlas and scout (default policy: every author's `workspace`
memories plus their own private ones) and guest (policy: only atlas's memories, kind `secret` and tag
`hr` denied). Workspace acme/other is another partition that none of them may read.

Every memory one of them may not read belongs to a *family*: a marker word (`kv...`) that appears in its
content, id, entity, tags, kind or session, and nowhere else. A principal that observes a family's
marker anywhere (a name, a byte of a file, a count line, an error message) has seen something it may not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conftest import fact, turn

ORG, WS, OTHER_WS = "acme", "proj", "other"
READERS = ("atlas", "scout", "guest")
GUEST_POLICY = ["--authors", "atlas", "--deny-kind", "secret", "--deny-tag", "hr"]


@dataclass(frozen=True)
class Family:
    marker: str
    hidden_from: frozenset[str]
    records: list[dict] = field(hash=False)
    ids: tuple[str, ...] = ()
    entity: str | None = None
    kind: str | None = None
    tags: tuple[str, ...] = ()
    session: str | None = None
    text: str = ""  # the content a recall query is made from
    workspace: str = WS


def _fact_family(marker: str, author: str, hidden: set[str], *, visibility: str = "workspace",
                 kind: str | None = None, tags: tuple[str, ...] = (), text: str) -> Family:
    kind = kind or f"{marker}-kind"
    tags = tags or (f"{marker}-tag",)
    content = f"{marker} {text}"
    mem_id = f"f-{marker}"
    rec = fact(f"{marker}-src", content, id=mem_id, agent=author, visibility=visibility, kind=kind,
               tags=list(tags), entity=f"{marker}-ent")
    # A second version, so history/<id>/ holds more than one file.
    rec2 = {**rec, "source_id": f"{marker}-src", "content": content + " (revised)",
            "created_at": "2026-06-02T10:00:00Z"}
    return Family(marker, frozenset(hidden), [rec, rec2], (mem_id,), f"{marker}-ent", kind, tags, None,
                  content + " (revised)")


OPEN = [
    fact("open-1", "The release train leaves on thursdays after the freeze", id="f-train", agent="atlas",
         kind="decision", tags=["release"], entity="release"),
    fact("open-2", "Atlas keeps the runbook next to the deploy scripts", id="f-runbook", agent="atlas",
         entity="runbook", tags=["ops"]),
    fact("open-3", "The standup starts at ten in the small room", id="f-standup", agent="atlas",
         slot="standup.time", tags=["team"]),
    turn("s-open", 0, "atlas", "We ship the release train on thursdays.", agent="atlas"),
    turn("s-open", 1, "atlas", "The runbook explains the rollback.", agent="atlas"),
    {"type": "summary", "source_id": "s-open#summary", "session": "s-open", "title": "Release planning",
     "content": "Release train on thursdays; runbook covers rollback.", "agent": "atlas",
     "created_at": "2026-06-01T11:00:00Z"},
    # a question everyone may read, whose reply (kvreply, below) only its author may: recall follows a
    # question turn to its reply (query/replies.py), and must not follow it past the gate
    turn("s-keys", 0, "atlas", "Where did the crew stash the harbor keys?", agent="atlas"),
]

_scout_session = "kvscoutsess-bunker"
FAMILIES = [
    _fact_family("kvatlaspriv", "atlas", {"scout", "guest"}, visibility="private",
                 text="the atlas vault combination is stored in the orchard shed"),
    _fact_family("kvscoutpriv", "scout", {"atlas", "guest"}, visibility="private",
                 text="scout hides the spare laptop under the lighthouse stairs"),
    _fact_family("kvscoutpub", "scout", {"guest"},
                 text="scout measured the river crossing at forty meters"),
    _fact_family("kvsecret", "atlas", {"guest"}, kind="secret",
                 text="the deploy token for the harbor cluster rotates monthly"),
    _fact_family("kvhrtag", "atlas", {"guest"}, tags=("hr", "kvhrtag-tag"),
                 text="salary bands for the harbor team were approved"),
    Family("kvscoutsess", frozenset({"atlas", "guest"}), [
        turn(_scout_session, 0, "scout", "kvscoutsess the tunnel map is in the blue folder", agent="scout",
             visibility="private"),
        turn(_scout_session, 1, "scout", "kvscoutsess remember the tunnel password", agent="scout",
             visibility="private"),
        {"type": "summary", "source_id": f"{_scout_session}#summary", "session": _scout_session,
         "title": "kvscoutsess tunnel", "content": "kvscoutsess tunnel map and password", "agent": "scout",
         "visibility": "private", "created_at": "2026-06-01T12:00:00Z"},
    ], session=_scout_session, text="kvscoutsess the tunnel map is in the blue folder"),
    Family("kvreply", frozenset({"atlas", "guest"}), [
        turn("s-keys", 1, "scout", "kvreply under the third plank of the boathouse", agent="scout",
             visibility="private"),
    ], text="Where did the crew stash the harbor keys?"),
    # Hidden memories that would replace visible ones: a private fact that supersedes one, another that
    # takes a visible fact's slot, and a private newer version of a visible fact's own id. A reader that
    # may not read them must see the visible ones as current, as a store without them shows them.
    Family("kvreplace", frozenset({"atlas", "guest"}), [
        fact("kvreplace-src", "kvreplace the release train now leaves on fridays", id="f-kvreplace",
             agent="scout", visibility="private", supersedes="f-train", kind="kvreplace-kind",
             tags=["kvreplace-tag"], entity="kvreplace-ent", created_at="2026-06-03T10:00:00Z"),
        fact("kvreplace-slot-src", "kvreplace the standup starts at nine now", id="f-kvreplace-slot",
             agent="scout", visibility="private", slot="standup.time", kind="kvreplace-kind",
             tags=["kvreplace-tag"], created_at="2026-06-03T10:00:00Z"),
        fact("kvreplace-ver-src", "kvreplace the runbook lives in the wiki", id="f-runbook", agent="scout",
             visibility="private", kind="kvreplace-kind", tags=["kvreplace-tag"],
             created_at="2026-06-03T10:00:00Z"),
    ], ids=("f-kvreplace", "f-kvreplace-slot"), entity="kvreplace-ent", kind="kvreplace-kind",
        tags=("kvreplace-tag",), text="kvreplace the release train now leaves on fridays"),
    Family("kvotherws", frozenset(READERS), [
        fact("kvotherws-src", "kvotherws the other workspace keeps its lanterns in the attic", id="f-kvotherws",
             agent="atlas", entity="kvotherws-ent", tags=["kvotherws-tag"], kind="kvotherws-kind",
             workspace=f"{ORG}/{OTHER_WS}"),
        turn("kvotherws-sess", 0, "atlas", "kvotherws lanterns in the attic", agent="atlas",
             workspace=f"{ORG}/{OTHER_WS}"),
    ], ids=("f-kvotherws",), entity="kvotherws-ent", kind="kvotherws-kind", tags=("kvotherws-tag",),
        session="kvotherws-sess", text="kvotherws the other workspace keeps its lanterns in the attic",
        workspace=OTHER_WS),
]


def all_records() -> list[dict]:
    return OPEN + [r for f in FAMILIES for r in f.records]


def visible_records(reader: str) -> list[dict]:
    """What `reader` may read: the store a clean view of it is compared with."""
    return OPEN + [r for f in FAMILIES if reader not in f.hidden_from for r in f.records]


def hidden(reader: str) -> list[Family]:
    return [f for f in FAMILIES if reader in f.hidden_from]
