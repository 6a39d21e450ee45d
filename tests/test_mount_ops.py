"""The Operations layer driven directly (no kernel): errors, scope, threads, caching, fresh inodes.

The real-mount tests (test_mount_fs.py) drive the same code through the kernel with real tools.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pyfuse3
import pytest
import trio
from mount_helpers import AGENT, SAMPLE, SAMPLE_FACT_IDS
from ops_helpers import listing, lookup_path, read_all

from recallfs.mount.browse import Browser
from recallfs.mount.concurrency import GuardedStore, LoopThreadError
from recallfs.mount.entries import INDEX_DEP, RECALL_DEP
from recallfs.mount.inodes import listing_deps
from recallfs.mount.operations import MountOps
from recallfs.mount.paths import Kind
from recallfs.query.ingest_file import ingest_records, load_file
from recallfs.scope.principal import Principal

from conftest import fact, write_jsonl

ROOT = pyfuse3.ROOT_INODE


def ingest(store: GuardedStore, path: Path, records: list) -> object:
    write_jsonl(path, records)
    return ingest_records(store, load_file(path, "jsonl", org="acme", workspace="proj", agent=AGENT), embedder=None)


@pytest.fixture
def ops(tmp_path: Path):
    store = GuardedStore(tmp_path / "store.duckdb", create=True)
    ingest(store, tmp_path / "sample.jsonl", SAMPLE)
    browser = Browser(store, Principal("acme", "proj", AGENT), max_rows=1000, mountpoint=str(tmp_path / "mnt"),
                      k=10)
    ops = MountOps(store, browser, recall_ttl=5, kernel=False)
    store.loop_thread = threading.get_ident()  # as the daemon does: no DuckDB on this (the trio) thread
    yield ops
    store.loop_thread = None
    store.close()


def errno_of(excinfo: pytest.ExceptionInfo) -> int:
    return excinfo.value.errno


async def test_every_file_reads_its_announced_size(ops: MountOps) -> None:
    seen = 0
    stack = [ROOT]
    while stack:
        ino = stack.pop()
        for name in await listing(ops, ino):
            attr = await ops.lookup(ino, os.fsencode(name))
            if attr.st_mode & 0o170000 == 0o040000:
                stack.append(attr.st_ino)
            elif attr.st_mode & 0o170000 == 0o100000:
                assert len(await read_all(ops, attr.st_ino)) == attr.st_size, name
                seen += 1
    assert seen > 20
    assert ops.stats.unexpected == 0
    assert ops.store.violations == 0


async def test_no_store_call_on_the_trio_thread(ops: MountOps) -> None:
    with pytest.raises(LoopThreadError):
        ops.browser.listing(Kind.FACTS, {})
    assert ops.store.violations == 1
    # Through the Operations everything reaches the store from worker threads.
    facts = await lookup_path(ops, "facts")
    assert len(await listing(ops, facts)) == len(SAMPLE_FACT_IDS) + 2
    await lookup_path(ops, "recall/.results/nextest retries")
    assert ops.store.violations == 1


async def test_scope_hides_private_memories_everywhere(ops: MountOps) -> None:
    facts = await lookup_path(ops, "facts")
    names = await listing(ops, facts)
    assert {n.rsplit("--", 1)[1][:-3] for n in names if n.endswith(".md")} == SAMPLE_FACT_IDS
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.lookup(facts, b"the-vault-password-rotates-on-fridays--f-secret.md")
    assert errno_of(exc) == errno.ENOENT
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await lookup_path(ops, "history/f-secret")
    assert errno_of(exc) == errno.ENOENT
    results = await lookup_path(ops, "recall/.results/vault password fridays")
    assert [n for n in await listing(ops, results) if n.endswith(".md")] == []
    index = await read_all(ops, await lookup_path(ops, "index.md"))
    assert b"vault" not in index and b"facts: 4\n" in index


@pytest.mark.parametrize("call", [
    lambda o: o.mkdir(ROOT, b"new", 0o755),
    lambda o: o.create(ROOT, b"new.md", 0o644, os.O_WRONLY | os.O_CREAT),
    lambda o: o.unlink(ROOT, b"index.md"),
    lambda o: o.rmdir(ROOT, b"facts"),
    lambda o: o.rename(ROOT, b"index.md", ROOT, b"x.md", 0),
    lambda o: o.symlink(ROOT, b"l", b"index.md"),
    lambda o: o.link(ROOT, ROOT, b"l"),
    lambda o: o.setattr(ROOT, pyfuse3.EntryAttributes(), pyfuse3.SetattrFields(), None),
    lambda o: o.write(1, 0, b"x"),
    lambda o: o.setxattr(ROOT, b"user.x", b"1"),
    lambda o: o.mknod(ROOT, b"n", 0o644, 0),
])
async def test_every_write_is_erofs(ops: MountOps, call) -> None:
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await call(ops)
    assert errno_of(exc) == errno.EROFS


async def test_open_for_writing_is_erofs(ops: MountOps) -> None:
    index = await lookup_path(ops, "index.md")
    for flags in (os.O_WRONLY, os.O_RDWR, os.O_RDONLY | os.O_TRUNC, os.O_WRONLY | os.O_APPEND):
        with pytest.raises(pyfuse3.FUSEError) as exc:
            await ops.open(index, flags)
        assert errno_of(exc) == errno.EROFS


async def test_enotdir_enoent_enametoolong(ops: MountOps) -> None:
    index = await lookup_path(ops, "index.md")
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.lookup(index, b"child")
    assert errno_of(exc) == errno.ENOTDIR
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.opendir(index)
    assert errno_of(exc) == errno.ENOTDIR
    facts = await lookup_path(ops, "facts")
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.lookup(facts, b"no-such-fact--f-nope.md")  # could exist after an ingest: not cached
    assert errno_of(exc) == errno.ENOENT
    never = await ops.lookup(ROOT, b".gitignore")  # can never exist: a negative entry the kernel caches
    assert never.st_ino == 0 and never.entry_timeout > 0
    recall = await lookup_path(ops, "recall")
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.lookup(recall, b"q" * 256)
    assert errno_of(exc) == errno.ENAMETOOLONG
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.getattr(10**9)
    assert errno_of(exc) == errno.ENOENT
    assert ops.stats.unexpected == 0


async def test_unexpected_errors_become_eio_and_the_fs_keeps_serving(ops: MountOps) -> None:
    facts = await lookup_path(ops, "facts")
    ops.store.close()  # a real failure: every query now raises inside DuckDB
    await ops.lookup(facts, b"by-kind")  # a static name needs no query: still fine
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await lookup_path(ops, "history/f-ci")
    assert errno_of(exc) == errno.EIO
    assert ops.stats.unexpected == 1
    assert "lookup" in (ops.stats.last_unexpected or "")
    assert (await ops.getattr(ROOT)).st_ino == ROOT  # the next request is served
    await ops.forget([(facts, 1), (123456789, 1)])  # forget never raises, even for unknown inodes


async def test_recall_directory_holds_hits_json_and_context(ops: MountOps) -> None:
    link = await lookup_path(ops, "recall/nextest retries")
    assert await ops.readlink(link) == b".results/nextest retries"
    results = await lookup_path(ops, "recall/.results/nextest retries")
    names = await listing(ops, results)
    assert names[-2:] == ["results.json", "context.xml"]
    assert names[0].startswith("01-")
    recall = await lookup_path(ops, "recall")
    assert await listing(ops, recall) == ["README.md", "nextest retries"]  # how to recall; recent queries, as links
    same = await lookup_path(ops, "recall/.results/nextest retries")
    assert same == results  # within the TTL and the same generation: the same snapshot


async def test_changed_content_gets_a_fresh_inode(ops: MountOps, tmp_path: Path) -> None:
    facts = await lookup_path(ops, "facts")
    old_name = "maya-prefers-short-commit-messages--f-pref.md"
    old = await ops.lookup(facts, old_name.encode())
    old_bytes = await read_all(ops, old.st_ino)
    history = await lookup_path(ops, "history/f-pref")
    assert old_name in await listing(ops, facts)

    store = ops.store
    await ops.write_store(lambda: ingest(store, tmp_path / "v2.jsonl", [
        fact("pref-1", "Maya prefers commit messages under fifty characters", id="f-pref", kind="preference",
             entity="maya")]))

    names = await listing(ops, facts)
    assert old_name not in names
    new_name = "maya-prefers-commit-messages-under-fifty--f-pref.md"
    new = await ops.lookup(facts, new_name.encode())
    assert new.st_ino != old.st_ino
    assert b"fifty" in await read_all(ops, new.st_ino)
    assert await read_all(ops, old.st_ino) == old_bytes  # the old inode's content never changes
    assert await listing(ops, history) == ["v1.md", "v2.md"]
    with pytest.raises(pyfuse3.FUSEError):
        await ops.lookup(facts, old_name.encode())


async def test_concurrent_lookups_share_one_recall(ops: MountOps) -> None:
    results = await lookup_path(ops, "recall/.results")
    inodes: list[int] = []

    async def one() -> None:
        inodes.append((await ops.lookup(results, b"flaky windows test")).st_ino)

    async with trio.open_nursery() as nursery:
        for _ in range(16):
            nursery.start_soon(one)
    assert len(set(inodes)) == 1


async def test_a_listed_hit_still_opens_after_its_run_is_replaced(ops: MountOps, tmp_path: Path) -> None:
    # `ls recall/q/` then `cat recall/q/NN-...md`: an ingest in between makes a new run that ranks
    # differently, and the name the agent was shown must still open, with the bytes it had.
    first = await lookup_path(ops, "recall/.results/deploy release")
    names = [n for n in await listing(ops, first) if n.endswith(".md")]
    before = {n: await read_all(ops, await ops_lookup(ops, first, n)) for n in names}
    await ops.write_store(lambda: ingest(ops.store, tmp_path / "more.jsonl", [
        fact("rel-1", "Deploy release: the release train deploys every Tuesday", kind="procedure")]))
    second = await lookup_path(ops, "recall/.results/deploy release")
    assert second != first
    now = [n for n in await listing(ops, second) if n.endswith(".md")]
    gone = [n for n in names if n not in now]
    assert gone, (names, now)  # the new fact took rank 1, so every old name moved
    for name in names:
        assert await read_all(ops, await ops_lookup(ops, second, name)) == before[name]
    assert "99-fact-nothing.md" not in now
    with pytest.raises(pyfuse3.FUSEError):
        await ops_lookup(ops, second, "99-fact-nothing.md")


async def ops_lookup(ops: MountOps, parent: int, name: str) -> int:
    return int((await ops.lookup(parent, os.fsencode(name))).st_ino)


# -- serving without handles (issue 13): declines, listing dependencies, invalidation -----------------
async def test_open_and_opendir_decline_so_the_kernel_caches(ops: MountOps) -> None:
    index = await lookup_path(ops, "index.md")
    facts = await lookup_path(ops, "facts")
    for call in (ops.open(index, os.O_RDONLY), ops.opendir(facts), ops.opendir(ROOT)):
        with pytest.raises(pyfuse3.FUSEError) as exc:
            await call
        assert errno_of(exc) == errno.ENOSYS
    assert (await read_all(ops, index)).startswith(b"---\n")  # read(fh=inode)
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await ops.read(facts, 0, 10)
    assert errno_of(exc) == errno.EISDIR


async def test_a_map_uid_view_keeps_opendir_and_never_caches_the_root(ops: MountOps) -> None:
    view = MountOps(ops.store, ops.browser, recall_ttl=5, kernel=False, view_index=1)
    root = await view.opendir(ROOT)
    assert root.fh == 1 << 40 and not root.cache_readdir  # the view's base routes the root's readdir
    facts = await lookup_path(view, "facts")
    info = await view.opendir(facts)
    assert info.fh == facts and info.cache_readdir and info.keep_cache
    with pytest.raises(pyfuse3.FUSEError) as exc:
        await view.open(await lookup_path(view, "index.md"), os.O_RDONLY)
    assert errno_of(exc) == errno.ENOSYS


@pytest.mark.parametrize(("kind", "params", "deps"), [
    (Kind.ROOT, {}, {INDEX_DEP}), (Kind.FACTS, {}, {INDEX_DEP}), (Kind.KINDS, {}, {INDEX_DEP}),
    (Kind.SESSIONS, {}, {INDEX_DEP}), (Kind.ENTITIES, {}, {INDEX_DEP}), (Kind.HISTORY, {}, {INDEX_DEP}),
    (Kind.KIND, {"kind": "decision"}, {("kind", "decision")}), (Kind.TAG, {"tag": "ci"}, {("tag", "ci")}),
    (Kind.SESSION, {"session": "s1"}, {("session", "s1")}), (Kind.TURNS, {"session": "s1"}, {("session", "s1")}),
    (Kind.VERSIONS, {"id": "f-ci"}, {("id", "f-ci")}), (Kind.RECALL, {}, {RECALL_DEP}),
    (Kind.RESULTS, {}, set()), (Kind.QUERY, {"query": "q"}, set()),
])
def test_listing_deps(kind: Kind, params: dict, deps: set) -> None:
    assert set(listing_deps(kind, params)) == deps


async def test_an_ingest_drops_exactly_the_listings_it_changed(ops: MountOps, tmp_path: Path) -> None:
    paths = ["", "facts", "facts/by-kind/decision", "facts/by-kind/procedure", "history/f-ci", "history/f-deploy",
             "sessions/2026-06-01-ci", "sessions/2026-06-01-ci/turns"]
    inos = {p: await lookup_path(ops, p) for p in paths}
    for ino in inos.values():
        await ops.entries(ino)
    assert set(inos.values()) <= set(ops.inodes.listed)
    await ops.write_store(lambda: ingest(ops.store, tmp_path / "new.jsonl", [
        fact("ci-9", "CI also runs clippy", id="f-ci", kind="decision", tags=["ci"], entity="ci")]))
    dropped = {p for p, ino in inos.items() if ino not in ops.inodes.listed}
    assert dropped == {"", "facts", "facts/by-kind/decision", "history/f-ci"}
    assert len(await listing(ops, inos["history/f-ci"])) == 2


async def test_a_new_recall_run_drops_the_listing_of_recall(ops: MountOps) -> None:
    recall = await lookup_path(ops, "recall")
    assert await listing(ops, recall) == ["README.md"]
    assert recall in ops.inodes.listed
    before = ops.upkeep.invalidations
    await lookup_path(ops, "recall/.results/nextest retries")
    assert recall not in ops.inodes.listed and ops.upkeep.invalidations > before
    assert await listing(ops, recall) == ["README.md", "nextest retries"]
