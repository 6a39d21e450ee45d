"""mount/inodes.InodeTable: a name's node found again by identity, and the kernel's bindings tracked for
invalidation through one dict keyed by (parent, name), also while a name changes its identity."""

from __future__ import annotations

from recallfs.mount.entries import RECALL_DEP, Content, Entry, directory
from recallfs.mount.inodes import InodeTable, Node
from recallfs.mount.paths import Kind


def _fact(version: int, name: str = "a.md", fact_id: str = "f-a") -> Entry:
    return Entry(name, Kind.FACT, content=Content(("row", "facts", version, None), 10), deps=(("id", fact_id),))


def _table() -> tuple[InodeTable, Node]:
    table = InodeTable(5.0)
    return table, table.node_for(table.root, directory("facts", Kind.FACTS))


def test_the_same_identity_finds_the_same_node_and_another_makes_a_new_one() -> None:
    table, facts = _table()
    a = table.node_for(facts, _fact(1))
    assert table.node_for(facts, _fact(1)) is a
    b = table.node_for(facts, _fact(2))
    assert b.ino > a.ino and table.get(a.ino) is a  # a's number is never reused
    assert table.node_for(facts, _fact(2)) is b  # nothing bound a: the newest node holds the name


def test_a_bound_name_keeps_its_node_until_the_kernel_binds_the_new_one() -> None:
    table, facts = _table()
    a = table.node_for(facts, _fact(1))
    table.remember(a)
    assert table.bound_ino(facts.ino, "a.md") == a.ino
    b = table.node_for(facts, _fact(2))  # a readdir reply the kernel may not accept
    assert table.bound_ino(facts.ino, "a.md") == a.ino
    table.discard_if_unused(b)  # not accepted: the kernel still binds the name to a
    assert table.get(b.ino) is None and table.bound_ino(facts.ino, "a.md") == a.ino
    assert table.take_stale([("id", "f-a")]) == [(facts.ino, "a.md")]
    assert table.take_stale([("id", "f-a")]) == []  # told once


def test_binding_the_new_node_unbinds_the_old_one() -> None:
    table, facts = _table()
    a = table.node_for(facts, _fact(1))
    table.remember(a)
    b = table.node_for(facts, _fact(2))
    table.remember(b)
    assert table.bound_ino(facts.ino, "a.md") == b.ino and not a.bound
    table.forget(a.ino, 1)  # the old node goes; the name stays bound to the new one
    assert table.get(a.ino) is None and table.bound_ino(facts.ino, "a.md") == b.ino
    assert table.take_stale([("id", "f-other")]) == []
    assert table.take_stale([("id", "f-a")]) == [(facts.ino, "a.md")]
    table.forget(b.ino, 1)
    assert table.bound_ino(facts.ino, "a.md") is None and table.take_stale([("id", "f-a")]) == []


def test_names_the_kernel_looks_up_on_every_use_are_never_invalidated() -> None:
    table, _ = _table()
    results = table.node_for(table.root, directory(".results", Kind.RESULTS))
    run = table.node_for(results, Entry("q", Kind.QUERY, {"snapshot": 1}, deps=(RECALL_DEP,)))
    table.remember(run)
    assert table.bound_ino(results.ino, "q") == run.ino  # what recall/ showed before a new run
    assert table.take_stale([RECALL_DEP]) == []
    again = table.node_for(results, Entry("q", Kind.QUERY, {"snapshot": 1}, deps=(RECALL_DEP,)))
    other = table.node_for(results, Entry("q", Kind.QUERY, {"snapshot": 2}, deps=(RECALL_DEP,)))
    assert again is run and other is not run


def test_a_version_without_deps_is_found_by_name_but_never_invalidated() -> None:
    table, _ = _table()
    history = table.node_for(table.root, directory("history", Kind.HISTORY))
    version = Entry("v1.md", Kind.VERSION, content=Content(("row", "facts", 1, None), 10))
    node = table.node_for(history, version)
    table.remember(node)
    assert table.node_for(history, version) is node and table.bound_ino(history.ino, "v1.md") is None
