"""The leak matrix: principals x every way of reading the mount, through the real FUSE mount.

For each reader, every memory it may not read (tests/scope_leak_data.py) must be invisible:
- no marker of it in any name, byte, count, size or error message seen through ls, stat, cat,
  grep -r, rg, find, a Python walk, recall directories (results.json, context.xml, hits) with queries
  made from its own text, guessed names under facts/, history/, entities/, sessions/, and the CLI's
  `recallfs recall --format json`;
- guessed names give ENOENT, never EACCES;
- the reader's view equals the view of a *clean* store that never held those memories: the same
  names, the same sizes, the same counts in index.md and, for the lexical mount, the same recall totals.

Run twice: one `--map-uid` mount serving the three readers as three system users with the semantic
arm on (the FAISS channel), and one plain mount per reader with the lexical arm only.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, run_cli_as, stop_mount, wait_until
from scope_leak_data import GUEST_POLICY, ORG, READERS, WS, Family, all_records, hidden, visible_records

from recallfs.mount.names import encode_value, fact_name

from conftest import REPO, run_cli, write_jsonl

SYSTEM_PYTHON = "/usr/bin/python3"
PROBE = REPO / "tests" / "leak_probe.py"
USERS = {"atlas": "rfs_atlas", "scout": "rfs_scout", "guest": "rfs_guest"}
OUTSIDER = "rfs_outsider"
COUNT_FIELDS = ("facts", "summaries", "turns", "sessions", "entities", "versions", "files")


def _users_problem() -> str | None:
    if os.geteuid() != 0:
        return "needs root: the test creates system users and runs commands as them (runuser)"
    for tool in ("useradd", "runuser", "rg"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"{SYSTEM_PYTHON} is missing (the probe runs as other users, who cannot reach the venv)"
    return None


needs_users = pytest.mark.skipif(_users_problem() is not None, reason=str(_users_problem()))
pytestmark = [needs_fuse, needs_users, pytest.mark.mount, pytest.mark.slow]


def ensure_user(name: str) -> int:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True, capture_output=True)
        return pwd.getpwnam(name).pw_uid


# -- what to try ---------------------------------------------------------------------------------------
def guesses(fam: Family) -> list[str]:
    """Names a reader could guess for a memory it may not read (and near misses of them)."""
    out: list[str] = []
    for mem_id in fam.ids:
        for variant in (mem_id, mem_id.upper(), mem_id + "0", mem_id[:-1]):
            name = fact_name(fam.text, variant)
            out += [f"facts/{name}", f"facts/x--{variant}.md", f"history/{variant}", f"history/{variant}/v1.md",
                    f"history/{variant}/v2.md", f"history/{variant}/v1-fact.md"]
            if fam.kind:
                out.append(f"facts/by-kind/{encode_value(fam.kind)}/{name}")
            out += [f"facts/by-tag/{encode_value(t)}/{name}" for t in fam.tags]
    if fam.entity:
        out += [f"entities/{encode_value(fam.entity, '.md')}", f"entities/{encode_value(fam.entity)}"]
    if fam.kind:
        out.append(f"facts/by-kind/{encode_value(fam.kind)}")
    out += [f"facts/by-tag/{encode_value(t)}" for t in fam.tags]
    if fam.session:
        s = encode_value(fam.session)
        out += [f"sessions/{s}", f"sessions/{s}/summary.md", f"sessions/{s}/transcript.md", f"sessions/{s}/turns",
                f"sessions/{s}/turns/0000-scout.md", f"sessions/{s}/turns/0001-scout.md"]
    return out


def queries(fam: Family) -> list[tuple[str, str]]:
    """(recall directory name, its search text) made from the memory's own text."""
    words = fam.text.replace(fam.marker, "").strip()
    out = [(fam.text, fam.text), (fam.text.replace(fam.marker, fam.marker.upper()), ""),
           (f"{fam.marker} k:50", fam.marker), (f"{words} k:50", words)]
    if fam.kind:
        out.append((f"{fam.marker} kind:{fam.kind}", fam.marker))
    if fam.tags:
        out.append((f"{fam.marker} tag:{fam.tags[0]}", fam.marker))
    if fam.session:
        out.append((f"{fam.marker} session:{fam.session}", fam.marker))
    return out


def reader_queries(reader: str) -> list[tuple[str, str]]:
    return [q for fam in hidden(reader) for q in queries(fam)]


# -- what was seen -------------------------------------------------------------------------------------
def leaks(texts: list[str], reader: str, own: list[tuple[str, str]], typed: list[str] = ()) -> list[str]:
    """Every forbidden marker seen, after removing the echo of what the reader typed itself: its
    queries, and the guessed paths that error messages repeat."""
    strip = sorted({s for q in own for s in q if s} | set(typed), key=len, reverse=True)
    found = []
    for text in texts:
        for s in strip:
            text = text.replace(s, "")
        low = text.lower()
        for fam in hidden(reader):
            if fam.marker in low:
                i = low.index(fam.marker)
                found.append(f"{fam.marker}: ...{text[max(0, i - 80): i + 80]!r}...")
    return found


def index_counts(text: str) -> dict[str, str]:
    fields = dict(re.findall(r"^([a-z_]+): (.*)$", text.split("\n---", 1)[0], flags=re.M))
    rows = [line for line in text.splitlines() if line.startswith("| `") or line.startswith("Counts:")]
    return {**{k: fields.get(k, "?") for k in COUNT_FIELDS}, "rows": "\n".join(rows)}


def results_of(probe_texts: list[str]) -> list[dict]:
    """The results.json files the probe read."""
    return [json.loads(t) for t in probe_texts if t.startswith("{") and '"total_candidates"' in t]


class Matrix:
    """Runs every read for one reader and counts them."""

    def __init__(self, mount: Path, as_user: str | None, env: dict[str, str]) -> None:
        self.mount = mount
        self.prefix = ["runuser", "-u", as_user, "--"] if as_user else []
        self.env = env
        self.reads = 0

    def sh(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.prefix, *cmd], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "LC_ALL": "C"}, stdin=subprocess.DEVNULL, errors="replace")

    def probe(self, guessed: list[str], asked: list[str]) -> dict:
        proc = subprocess.run([*self.prefix, SYSTEM_PYTHON, str(PROBE)], capture_output=True, text=True, timeout=600,
                              input=json.dumps({"root": str(self.mount), "guesses": guessed, "queries": asked}))
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        self.reads += out["reads"]
        return out

    def tools(self, guessed: list[str]) -> list[str]:
        """ls, find, grep -r, rg and cat, as the reader; everything they print."""
        m = str(self.mount)
        runs = [self.sh("ls", "-laR", m), self.sh("find", m, "-printf", "%p %s %y\n"),
                self.sh("grep", "-r", "", m), self.sh("rg", "-uu", "--no-messages", "", m),
                self.sh("grep", "-rc", "", m)]
        self.reads += sum(len(r.stdout.splitlines()) for r in runs)  # one line per entry or file read
        cats = [self.sh("cat", f"{m}/{g}") for g in guessed]
        stats = self.sh("stat", *[f"{m}/{g}" for g in guessed])
        self.reads += 2 * len(guessed)
        for proc in [*cats, stats]:
            assert "Permission denied" not in proc.stderr, proc.stderr
            assert proc.returncode != 0
        for proc in cats:
            assert "No such file or directory" in proc.stderr, proc.stderr
        return [t for r in [*runs, *cats, stats] for t in (r.stdout, r.stderr)]


def check_reader(matrix: Matrix, reader: str, clean: dict, *, compare_totals: bool) -> None:
    own = reader_queries(reader)
    guessed = [g for fam in hidden(reader) for g in guesses(fam)]
    out = matrix.probe(guessed, [q for q, _ in own])
    texts = out["texts"] + [json.dumps(out["walk"])] + matrix.tools(guessed)
    typed = [str(matrix.mount / g) for g in guessed] + guessed
    assert leaks(texts, reader, own, typed) == []
    wrong = {g: e for g, e in out["guesses"].items() if set(e) != {"ENOENT"}}
    assert wrong == {}, f"{reader}: guessed names must be ENOENT: {wrong}"
    # The same tree as a store that never held the hidden memories: names, sizes, counts.
    tree = {p: s for p, s in out["walk"].items() if not p.startswith("recall") and p != "index.md"}
    assert tree == clean["tree"]
    index = (matrix.mount / "index.md").read_text() if not matrix.prefix else matrix.sh(
        "cat", str(matrix.mount / "index.md")).stdout
    assert index_counts(index) == clean["index"]
    results = {r["query"]: r for r in results_of(out["texts"])}
    assert set(results) == {q for q, _ in own}
    for query, result in results.items():
        ids = {h["id"] for h in result["hits"]}
        assert not ids & {i for fam in hidden(reader) for i in fam.ids}, (query, ids)
        if compare_totals:
            assert result["total_candidates"] == clean["totals"][query], query
            assert ids == clean["ids"][query], query
            # and the same order and scores: hidden rows move no BM25 statistic (query/bm25_reader.py)
            mine, theirs = ranked(result), clean["ranked"][query]
            assert [i for i, _ in mine] == [i for i, _ in theirs], query
            assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], abs=2e-6), query


def ranked(result: dict) -> list[tuple[str, float]]:
    """A recall's hits in order, with their scores: ids in rank order, ties by id."""
    return sorted(((h["id"], h["score"]) for h in result["hits"]), key=lambda h: (-h[1], h[0]))


def cli_recall(env: dict[str, str], reader: str, own: list[tuple[str, str]], uid: int | None = None) -> list[str]:
    """The CLI's recall (through the daemon's control socket when mounted), as JSON. On a --map-uid mount
    it runs as the reader's uid: the daemon answers as the caller's mapped agent, and refuses root."""
    out = []
    for query, _ in own[:: max(1, len(own) // 6)]:
        args = ("recall", "--format", "json", "--agent", reader, query)
        proc = run_cli(*args, env=env) if uid is None else run_cli_as(uid, *args, env=env)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["agent"] == reader
        out.append(proc.stdout)
    return out


# -- fixtures ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def world() -> Iterator[dict]:
    base = Path(tempfile.mkdtemp(prefix="recallfs-leaks-"))
    base.chmod(0o755)  # the mapped users must reach the mount point below it
    (base / "run").mkdir()
    uids = {reader: ensure_user(user) for reader, user in USERS.items()}
    ensure_user(OUTSIDER)

    def env_for(store: Path, **extra: str) -> dict[str, str]:
        return {"RECALLFS_STORE": str(store), "RECALLFS_WORKSPACE": f"{ORG}/{WS}", "RECALLFS_AGENT": "atlas",
                "RECALLFS_SEMANTIC": "false", "XDG_RUNTIME_DIR": str(base / "run"), **extra}

    full = base / "full.duckdb"
    # The full store carries vectors: one of the mounts below runs the semantic arm over FAISS.
    full_env = env_for(full, RECALLFS_SEMANTIC="true")
    # One source path for every store: rendered files carry it (front matter `source`), and the clean
    # views must render the same bytes.
    source = base / "memories.jsonl"
    run_cli("ingest", str(write_jsonl(source, all_records())), env=full_env, check=True, timeout=600)
    run_cli("policy", "set", "--agent", "guest", *GUEST_POLICY, env=full_env, check=True)
    clean: dict[str, dict] = {}
    for reader in READERS:
        store = base / f"clean-{reader}.duckdb"
        cenv = env_for(store)
        run_cli("ingest", str(write_jsonl(source, visible_records(reader))), env=cenv, check=True)
        run_cli("policy", "set", "--agent", "guest", *GUEST_POLICY, env=cenv, check=True)
        clean[reader] = _clean_view(base, cenv, reader)
    yield {"base": base, "full": full, "env_for": env_for, "uids": uids, "clean": clean}
    shutil.rmtree(base, ignore_errors=True)


def _mount(base: Path, env: dict[str, str], name: str, *extra: str) -> Mount:
    path = base / name
    path.mkdir(exist_ok=True)
    run_cli("mount", str(path), *extra, env=env, check=True, timeout=300)
    return Mount(path, Path(env["RECALLFS_STORE"]), env)


def _clean_view(base: Path, env: dict[str, str], reader: str) -> dict:
    mount = _mount(base, {**env, "RECALLFS_AGENT": reader}, f"clean-{reader}")
    try:
        out = Matrix(mount.path, None, env).probe([], [q for q, _ in reader_queries(reader)])
        results = {r["query"]: r for r in results_of(out["texts"])}
        return {
            "tree": {p: s for p, s in out["walk"].items() if not p.startswith("recall") and p != "index.md"},
            "index": index_counts((mount.path / "index.md").read_text()),
            "totals": {q: r["total_candidates"] for q, r in results.items()},
            "ids": {q: {h["id"] for h in r["hits"]} for q, r in results.items()},
            "ranked": {q: ranked(r) for q, r in results.items()},
        }
    finally:
        stop_mount(mount)


# -- the matrix ----------------------------------------------------------------------------------------
def test_leak_matrix_uid_mapped_mount_with_semantic_arm(world: dict) -> None:
    env = world["env_for"](world["full"], RECALLFS_SEMANTIC="true")
    maps = [a for reader, uid in world["uids"].items() for a in ("--map-uid", f"{uid}={reader}")]
    mount = _mount(world["base"], env, "mapped", *maps)
    try:
        assert wait_until(lambda: not mount.mount_info().get("detail", {}).get("degraded", True), timeout=300), \
            "the semantic arm never became ready"
        reads = 0
        for reader in READERS:
            matrix = Matrix(mount.path, USERS[reader], env)
            # Twice: the kernel caches listings and pages (issue 13), so the second pass is served from
            # what this reader's first pass left, and the first from a mount the previous reader warmed.
            for _ in range(2):
                check_reader(matrix, reader, world["clean"][reader], compare_totals=False)
            own = reader_queries(reader)
            outputs = cli_recall(env, reader, own, uid=world["uids"][reader])
            assert leaks(outputs, reader, own) == []
            assert all(not json.loads(o)["degraded"] for o in outputs), "the FAISS channel did not run"
            reads += matrix.reads + len(outputs)
        # A uid outside the map gets nothing, not even the root's names.
        outsider = Matrix(mount.path, OUTSIDER, env)
        for cmd in (["ls", str(mount.path)], ["cat", f"{mount.path}/index.md"], ["stat", f"{mount.path}/facts"],
                    ["ls", f"{mount.path}/recall/release train/"], ["grep", "-r", "x", str(mount.path)]):
            proc = outsider.sh(*cmd)
            assert proc.returncode != 0 and "Permission denied" in proc.stderr, (cmd, proc.stderr)
            assert leaks([proc.stdout, proc.stderr], "guest", []) == []
            reads += 1
        health = mount.mount_info()["detail"]
        assert health["unexpected_errors"] == 0 and health["loop_thread_violations"] == 0
        assert health["denied_uid_requests"] > 0
        # The mount's totals are every view's: once by_op and errnos were the first view's alone, so an
        # EIO answered to another agent never showed in status.
        views = health["views"].values()
        assert sum(health["by_op"].values()) == health["requests"] >= sum(v["requests"] for v in views)
        assert all(health["errnos"].get(e, 0) >= n for v in views for e, n in v["errnos"].items())
        assert "EIO" not in health["errnos"] and health["errnos"].get("EACCES", 0) > 0  # the outsider's
        # The caching was on: open declined once at most per view, listings kept by the kernel.
        assert all(v["by_op"].get("open", 0) <= 1 and v["listings_in_kernel"] > 0 for v in health["views"].values())
    finally:
        stop_mount(mount)
    print(f"\nleak matrix (--map-uid, semantic arm on): {reads} attempted reads, 0 leaks")
    assert reads >= 1000


def check_plain_mount(base: Path, env: dict[str, str], name: str, reader: str, clean: dict) -> int:
    """The whole matrix for `reader` on a plain (lexical, one-principal) mount of env's store, and the
    CLI's recall; returns the reads attempted."""
    mount = _mount(base, env, name)
    try:
        matrix = Matrix(mount.path, None, env)
        check_reader(matrix, reader, clean, compare_totals=True)
        own = reader_queries(reader)
        outputs = cli_recall(env, reader, own)
        assert leaks(outputs, reader, own) == []
        assert mount.mount_info()["detail"]["unexpected_errors"] == 0
        return matrix.reads + len(outputs)
    finally:
        stop_mount(mount)


def test_leak_matrix_plain_mounts_lexical(world: dict) -> None:
    reads = 0
    for reader in READERS:
        env = world["env_for"](world["full"], RECALLFS_AGENT=reader)
        reads += check_plain_mount(world["base"], env, f"plain-{reader}", reader, world["clean"][reader])
    print(f"\nleak matrix (plain mounts, lexical): {reads} attempted reads, 0 leaks")
    assert reads >= 1000


def test_leak_matrix_writes(world: dict) -> None:
    """The matrix extended to writes (issue 17), on a --map-uid mount: a file that claims another agent or
    workspace stores nothing; what a reader writes is stored as that reader, and every view that may read
    it shows it as the reader's; no reader sees another's pending files or notes; a uid outside the map
    stores nothing. Last in the module: it changes the store."""
    env = world["env_for"](world["full"])
    maps = [a for reader, uid in world["uids"].items() for a in ("--map-uid", f"{uid}={reader}")]
    mount = _mount(world["base"], env, "writes", *maps)
    m = mount.path
    try:
        for reader in READERS:
            as_reader = Matrix(m, USERS[reader], env)
            other = next(r for r in READERS if r != reader)
            for claim in (f"agent: {other}", f"workspace: {ORG}/elsewhere"):
                proc = as_reader.sh("bash", "-c", f"printf -- '---\\n{claim}\\n---\\nplanted by {reader}\\n' "
                                                  f"| cat > {m}/inbox/plant.md")
                assert proc.returncode != 0 and "Invalid argument" in proc.stderr, (reader, claim, proc.stderr)
            proc = as_reader.sh("bash", "-c", f"echo 'petrel {reader} wrote this itself' | cat > {m}/inbox/own.md")
            assert proc.returncode == 0, proc.stderr
        outsider = Matrix(m, OUTSIDER, env).sh("bash", "-c", f"echo 'petrel outsider' | cat > {m}/inbox/o.md")
        assert outsider.returncode != 0 and "Permission denied" in outsider.stderr, outsider.stderr
        for viewer in READERS:
            as_viewer = Matrix(m, USERS[viewer], env)
            assert as_viewer.sh("grep", "-rl", "planted", f"{m}/facts", f"{m}/history").stdout == ""
            assert "petrel outsider" not in as_viewer.sh("grep", "-rh", "petrel", f"{m}/facts").stdout
            seen = {}
            for path in as_viewer.sh("grep", "-rl", "wrote this itself", f"{m}/facts").stdout.split():
                text = as_viewer.sh("cat", path).stdout
                writer = re.search(r"petrel (\w+) wrote", text)
                assert writer is not None and f"agent: {writer.group(1)}\n" in text, text
                seen[writer.group(1)] = path
            assert viewer in seen  # its own, whatever its policy
            assert as_viewer.sh("ls", "-A", f"{m}/inbox").stdout.split() == [".rejected"]
            assert as_viewer.sh("ls", f"{m}/inbox/.rejected").stdout.split() == ["plant.md"]
            note = as_viewer.sh("cat", f"{m}/inbox/.rejected/plant.md").stdout
            assert f"planted by {viewer}" not in note and "elsewhere" in note  # its own last refusal only
        assert mount.mount_info()["detail"]["unexpected_errors"] == 0
    finally:
        stop_mount(mount)
