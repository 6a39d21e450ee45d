"""What a node costs and what its attributes say (issue 13: the daemon's peak RSS after a walk).

A cold walk of a 100k-memory store leaves ~360k nodes and ~300k listed entries in the daemon. Attributes
are built per request from the node's fields rather than stored, an entry's tags are a tuple, and one
dict keyed by (parent, name) finds a node by name and tracks the kernel's bindings; the bound below is
what one fact file costs now (entry, node and the table's bookkeeping: ~510 bytes), where a stored
EntryAttributes, a frozenset of tags and three dicts made it ~960.
"""

from __future__ import annotations

import gc
import stat
import tracemalloc
from datetime import UTC, datetime

import pyfuse3

from recallfs.mount.entries import NO_ROWS, Content, Entry, Listing, directory
from recallfs.mount.inodes import LONG_TIMEOUT, InodeTable
from recallfs.mount.paths import Kind

FILE_NODE_BYTES = 580
WHEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_a_listed_fact_file_costs_less_than_the_bound() -> None:
    n = 20_000
    table = InodeTable(5.0)
    facts = table.node_for(table.root, directory("facts", Kind.FACTS))
    # what a listing shares with the store's rows: names, ids and contents exist before the entries
    names = [f"fact-{i:06d}-some-words.md" for i in range(n)]
    ids = [f"f-{i:06d}" for i in range(n)]
    contents = [Content(("row", "facts", i, None), 400) for i in range(n)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        entries = [Entry(names[i], Kind.FACT, content=contents[i], mtime=WHEN, deps=(("id", ids[i]),))
                   for i in range(n)]
        for entry in entries:
            table.remember(table.node_for(facts, entry))
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used / n <= FILE_NODE_BYTES, f"{used / n:.0f} bytes a file"


def test_attributes_are_built_from_the_node() -> None:
    table = InodeTable(7.0)
    facts = table.node_for(table.root, directory("facts", Kind.FACTS))
    fact = table.node_for(facts, Entry("a.md", Kind.FACT, content=Content(("row", "facts", 1, None), 1000),
                                       mtime=WHEN))
    link = table.node_for(table.root, Entry("q", Kind.QUERY_LINK, target=".results/q"))
    a = table.attr(fact)
    assert (a.st_ino, stat.S_ISREG(a.st_mode), a.st_size, a.st_blocks) == (fact.ino, True, 1000, 2)
    assert a.st_mtime_ns == int(WHEN.timestamp() * 1e9) and a.attr_timeout == LONG_TIMEOUT
    a = table.attr(link)
    assert stat.S_ISLNK(a.st_mode) and a.st_size == len(b".results/q")
    a = table.attr(facts)
    assert stat.S_ISDIR(a.st_mode) and a.st_mtime_ns == table.started_ns
    # a listing the kernel is told to drop: the directory's mtime moves on, every time
    table.forget_listings([facts.ino, fact.ino])
    first = table.attr(facts).st_mtime_ns
    table.forget_listings([facts.ino])
    assert table.started_ns < first < table.attr(facts).st_mtime_ns
    assert table.attr(fact).st_mtime_ns > int(WHEN.timestamp() * 1e9)


def test_names_below_a_shared_root_are_looked_up_on_every_use() -> None:
    shared = InodeTable(7.0, shared_root=True)
    facts = shared.node_for(shared.root, directory("facts", Kind.FACTS))
    below = shared.node_for(facts, directory("by-kind", Kind.KINDS))
    assert shared.attr(facts).entry_timeout == 0 and shared.attr(below).entry_timeout == LONG_TIMEOUT
    own = InodeTable(7.0)
    assert own.attr(own.node_for(own.root, directory("facts", Kind.FACTS))).entry_timeout == LONG_TIMEOUT
    assert shared.root.ino == pyfuse3.ROOT_INODE


def test_a_cached_listing_holds_no_container_of_its_own_when_empty() -> None:
    listing = Listing([])
    assert listing.rows is NO_ROWS and listing.unlisted == ()
