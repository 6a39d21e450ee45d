"""Read policies on a real store: who may read which memories, enforced by the one predicate."""

from __future__ import annotations

import pytest

from recallfs.query.gate import authorize, scope_clause
from recallfs.query.ingest_file import ingest_records
from recallfs.query.policies import get_policy, list_policies, remove_policy, set_policy
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.store import Store
from recallfs.scope.policy import DEFAULT, Policy, PolicySpec, build_policy
from recallfs.scope.principal import Principal

from conftest import fact

ROWS = [
    fact("a-pub", "atlas shared note about the zephyr release", agent="atlas"),
    fact("a-priv", "atlas private note about the zephyr release", agent="atlas", visibility="private"),
    fact("s-pub", "scout shared note about the zephyr release", agent="scout"),
    fact("s-priv", "scout private note about the zephyr release", agent="scout", visibility="private"),
    fact("s-secret", "scout credentials rotation for zephyr", agent="scout", kind="secret"),
    fact("s-hr", "scout salary discussion zephyr", agent="scout", tags=["hr", "people"]),
]


def principal(agent: str) -> Principal:
    return Principal("acme", "proj", agent)


@pytest.fixture
def store(store_path):
    with Store(store_path) as s:
        ingest_records(s, [parse_record(r, org="acme", workspace="proj", agent="x") for r in ROWS], embedder=None)
        yield s


def visible(store: Store, agent: str) -> set[str]:
    result = recall(store, principal(agent), "zephyr k:50", arm="lexical")
    return {h.row["source_id"] for h in result.hits}


def visible_by_gate(store: Store, agent: str) -> set[str]:
    schema = store.schema_for(principal(agent))
    cur = store.cursor()
    all_rids = [r[0] for r in cur.execute(f"SELECT rid FROM {schema}.facts").fetchall()]
    ok = authorize(cur, principal(agent), schema, "facts", all_rids)
    rows = cur.execute(f"SELECT rid, source_id FROM {schema}.facts").fetchall()
    return {sid for rid, sid in rows if rid in ok}


EVERYONE_SHARED = {"a-pub", "s-pub", "s-secret", "s-hr"}

CASES = [
    # (agent, policy or None for the default, expected source ids)
    ("atlas", None, EVERYONE_SHARED | {"a-priv"}),
    ("scout", None, EVERYONE_SHARED | {"s-priv"}),
    ("guest", None, EVERYONE_SHARED),
    ("guest", Policy(authors=("atlas",)), {"a-pub"}),
    ("guest", Policy(visibilities=("workspace", "private")), EVERYONE_SHARED | {"a-priv", "s-priv"}),
    ("guest", Policy(deny_kinds=("secret",)), EVERYONE_SHARED - {"s-secret"}),
    ("guest", Policy(deny_tags=("hr",)), EVERYONE_SHARED - {"s-hr"}),
    ("atlas", Policy(authors=("scout",)), {"s-pub", "s-secret", "s-hr", "a-pub", "a-priv"}),  # own always
    ("atlas", Policy(), EVERYONE_SHARED | {"a-priv"}),  # a stored default policy
    ("scout", Policy(deny_kinds=("secret",), deny_tags=("people",)), {"a-pub", "s-pub", "s-priv"}),
]


@pytest.mark.parametrize(("agent", "policy", "expected"), CASES)
def test_policy_matrix(store, agent, policy, expected):
    if policy is not None:
        set_policy(store, principal(agent), policy)
    assert visible(store, agent) == expected
    assert visible_by_gate(store, agent) == expected


def test_policy_round_trip(store):
    p = build_policy(PolicySpec(authors=["atlas,scout"], visibilities=["workspace"], deny_kinds=["Secret"],
                                deny_tags=["hr"]))
    set_policy(store, principal("guest"), p)
    assert get_policy(store, principal("guest")) == (p, True)
    assert [a for a, _ in list_policies(store, "acme", "proj")] == ["guest"]
    assert remove_policy(store, principal("guest"))
    assert get_policy(store, principal("guest")) == (DEFAULT, False)


@pytest.mark.parametrize(("spec", "message"), [
    (PolicySpec(visibilities=["secret"]), "visibility 'secret'"),
    (PolicySpec(authors=["bad name"]), "bad author"),
])
def test_bad_policy_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        build_policy(spec)


def test_broken_policy_clause_still_cannot_cross_partitions(store, monkeypatch):
    """Defense in depth: even a predicate that allows everything reads only the principal's own schema."""
    with store.transaction() as cur:
        schema_b = store.ensure_partition(cur, "acme", "other")
    ingest_records(store, [parse_record(fact("b-1", "zephyr in another workspace"), org="acme",
                                        workspace="other", agent="x")], embedder=None)
    import recallfs.query.gate as gate

    monkeypatch.setattr(gate, "authorization_predicate", lambda p, alias="m": ("TRUE", []))
    where, _params = scope_clause(principal("guest"), store.schema_for(principal("guest")))
    assert where.startswith("TRUE")
    result = recall(store, principal("guest"), "zephyr k:50", arm="lexical")
    ids = {h.row["source_id"] for h in result.hits}
    assert "b-1" not in ids and ids  # the broken clause widened the policy, not the partition
    assert schema_b != store.schema_for(principal("guest"))
