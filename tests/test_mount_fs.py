"""A real mount in a subprocess, driven with ls, stat, cat, head, find, grep, rg, tar, os.walk and pathlib."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from mount_helpers import (
    AGENT,
    SAMPLE,
    SAMPLE_FACT_IDS,
    Mount,
    base_env,
    build_store,
    expected_tree,
    is_mounted,
    needs_fuse,
    start_mount,
    stop_mount,
    wait_until,
)

from recallfs.mount.names import encode_value

from conftest import RECALLFS, fact, turn, write_jsonl

yaml = pytest.importorskip("yaml")
pytestmark = [needs_fuse, pytest.mark.mount]


def sh(*cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120, **kw)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} exited {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("sample")
    env = base_env(tmp)
    build_store(tmp, SAMPLE, env)
    expected = expected_tree(Path(env["RECALLFS_STORE"]), "acme", "proj", AGENT)
    mount = start_mount(tmp, env)
    mount.expected = expected  # type: ignore[attr-defined]
    yield mount
    stop_mount(mount)


def files_under(root: Path) -> list[Path]:
    out = []
    for dirpath, _dirs, names in os.walk(root):
        out.extend(Path(dirpath) / n for n in names if not (Path(dirpath) / n).is_symlink())
    return sorted(out)


def front_matter(path: Path) -> dict:
    text = path.read_text()
    assert text.startswith("---\n"), path
    return yaml.safe_load(text.split("---\n", 2)[1])


def test_top_level_and_index(sample: Mount) -> None:
    assert sh("ls", str(sample.path)).stdout.split() == ["entities", "facts", "history", "inbox", "index.md", "recall",
                                                         "sessions"]
    head = sh("head", "-n", "3", str(sample.path / "index.md")).stdout
    assert head.startswith("---\nworkspace: acme/proj\n")
    meta = front_matter(sample.path / "index.md")
    assert meta["agent"] == AGENT and meta["facts"] == len(SAMPLE_FACT_IDS)
    assert meta["files"] == sample.expected["files"]  # type: ignore[attr-defined]
    assert meta["degraded"] is True and meta["degraded_reason"] == "off"
    text = (sample.path / "index.md").read_text()
    for needle in ("recall/", "k:20", "%2F", "255 bytes", "recallfs recall", "recallfs ingest", "degraded: off"):
        assert needle in text


def test_find_counts_the_store_and_every_size_is_exact(sample: Mount) -> None:
    found = sh("find", str(sample.path), "-type", "f").stdout.splitlines()
    assert len(found) == sample.expected["files"] + 1  # type: ignore[attr-defined]  # + recall/README.md
    walked = files_under(sample.path)
    assert len(walked) == len(found)
    for path in walked:
        st = os.stat(path)
        assert st.st_size == len(path.read_bytes()), path
    stat_sizes = sh("stat", "-c", "%s %n", *map(str, walked[:20])).stdout.splitlines()
    for line in stat_sizes:
        size, name = line.split(" ", 1)
        assert int(size) == int(sh("wc", "-c", name).stdout.split()[0])


def test_facts_views_and_front_matter(sample: Mount) -> None:
    facts = sample.path / "facts"
    names = {p.name for p in facts.iterdir() if p.is_file()}
    assert {n[:-3].split("--", 1)[1] for n in names} == SAMPLE_FACT_IDS
    ci = facts / "ci-runs-on-github-actions-with-cargo-nextest--f-ci.md"
    meta = front_matter(ci)
    assert meta["id"] == "f-ci" and meta["table"] == "facts" and meta["kind"] == "decision"
    assert meta["version"] == 1 and meta["tags"] == ["ci", "area/build"] and meta["source_id"] == "ci-1"
    assert ci.read_text().rstrip().endswith("CI runs on GitHub Actions with cargo nextest")
    assert (facts / "by-kind" / "decision" / ci.name).read_bytes() == ci.read_bytes()
    assert sorted(os.listdir(facts / "by-tag")) == ["area\u2215build", "ci", "deploy"]
    assert os.listdir(facts / "by-tag" / "area\u2215build") == [ci.name]
    assert sh("grep", "-rl", "nextest", str(facts)).stdout.split().count(str(ci)) == 1
    # superseded by slot: only in history
    assert not any("f-db14" in n for n in names)
    assert front_matter(sample.path / "history" / "f-db14" / "v1.md")["id"] == "f-db14"
    entity = (sample.path / "entities" / "ci.md").read_text()
    assert "cargo nextest" in entity and "make release" in entity


def test_sessions(sample: Mount) -> None:
    sessions = sample.path / "sessions"
    assert sorted(os.listdir(sessions)) == ["2026-06-01-ci", "planning\u2215q3"]
    ci = sessions / "2026-06-01-ci"
    assert sorted(os.listdir(ci)) == ["summary.md", "transcript.md", "turns"]
    turns = sorted(os.listdir(ci / "turns"))
    assert turns[:2] == ["0000-maya.md", "0001-atlas.md"] and len(turns) == 4
    assert all(t.startswith("0002-") for t in turns[2:])
    assert sum("--t-" in t for t in turns) == 1  # a repeated seq: the second turn's name carries its id
    transcript = (ci / "transcript.md").read_text()
    assert "atlas [2026-06-01-ci#1, 2026-06-01 10:01]: Sure: test_sync_windows fails" in transcript
    assert front_matter(ci / "summary.md")["title"] == "CI session"
    assert sorted(os.listdir(sessions / "planning\u2215q3")) == ["transcript.md", "turns"]
    rg = sh("rg", "-l", "path separators", str(sessions)).stdout.split()
    assert sorted(Path(p).name for p in rg) == ["0001-atlas.md", "summary.md", "transcript.md"]


def test_values_starting_with_a_dot_are_paths_that_open_cold(tmp_path: Path) -> None:
    """A session ".notes", a tag ".wip", a kind ".odd", an entity ".secret", tags "." and "..": each is
    listed under a name that opens without listing its directory first (a hidden name resolved to
    nothing, so `cat sessions/.notes/transcript.md` was ENOENT although `ls sessions/` showed .notes)."""
    env = base_env(tmp_path)
    build_store(tmp_path, [
        fact("dot-1", "A fact with dotted values", id="f-dots", tags=[".wip", ".", ".."],
             kind=".odd", entity=".secret"),
        turn(".notes", 0, "maya", "a turn in a dotted session")], env)
    mount = start_mount(tmp_path, env)
    try:
        m = mount.path
        assert "a turn in a dotted session" in (m / "sessions" / "\u2024notes" / "transcript.md").read_text()
        assert os.listdir(m / "facts" / "by-tag" / "\u2024wip") == ["a-fact-with-dotted-values--f-dots.md"]
        assert sh("cat", str(m / "entities" / "\u2024secret.md")).stdout.count("A fact with dotted values") == 1
        assert os.listdir(m / "facts" / "by-kind" / "\u2024odd")
        assert sorted(os.listdir(m / "facts" / "by-tag")) == ["\u2024", "\u2024.", "\u2024wip"]
        assert all(os.listdir(m / "facts" / "by-tag" / name) for name in ("\u2024", "\u2024."))
        found = sh("find", str(m), "-name", "*\u2024*").stdout.splitlines()
        assert len(found) == 6, found  # ․notes, ․secret.md, ․odd, and the three tags
    finally:
        stop_mount(mount)


def test_control_characters_in_values_are_names_that_list_and_open_as_one_line(tmp_path: Path) -> None:
    """Found 2026-12-07: a tag "nl\\nx" was a file name with a newline (`find | xargs` split it) and one
    holding ESC drove the terminal that listed it; each is shown as its control picture."""
    env = base_env(tmp_path)
    build_store(tmp_path, [
        fact("ctl-1", "A fact with control characters", id="f-ctl", tags=["nl\nx", "red\x1b[31mX", "csi\x9b2J"],
             kind="k\x07bell", entity="line1\nline2"),
        fact("pic-1", "A fact whose tag holds a control picture as written", id="f-pic", tags=["pic\u240a"]),
        turn("sess\tone", 0, "maya", "a turn in a tabbed session")], env)
    mount = start_mount(tmp_path, env)
    try:
        m = mount.path
        # cold (its directory not listed first): the name is looked up, and only the listing knows its value
        pic = encode_value("pic\u240a")
        assert pic.startswith("pic\u240a~")  # not the name of the tag "pic\n"
        assert os.listdir(m / "facts" / "by-tag" / pic) == [
            "a-fact-whose-tag-holds-a-control-picture-as--f-pic.md"]
        listed = sh("find", str(m), "-path", f"{m}/recall", "-prune", "-o", "-print").stdout
        assert not any(ch in listed.replace("\n", "") for ch in "\x1b\x07\t\x9b"), repr(listed)
        c1 = encode_value("csi\x9b2J")
        assert c1.startswith("csi\ufffd2J~")  # C1 controls (U+009B is CSI to xterm) have no picture
        assert sorted(os.listdir(m / "facts" / "by-tag")) == sorted([c1, "nl\u240ax", pic, "red\u241b[31mX"])
        assert os.listdir(m / "facts" / "by-tag" / c1) == ["a-fact-with-control-characters--f-ctl.md"]
        assert sorted(os.listdir(m / "facts" / "by-kind")) == ["fact", "k\u2407bell"]
        assert sh("cat", str(m / "entities" / "line1\u240aline2.md")).stdout.count("control characters") == 1
        assert "a turn in a tabbed session" in (m / "sessions" / "sess\u2409one" / "transcript.md").read_text()
        assert os.listdir(m / "facts" / "by-tag" / "nl\u240ax") == ["a-fact-with-control-characters--f-ctl.md"]
    finally:
        stop_mount(mount)


def test_values_a_stand_in_could_be_mistaken_for_have_names_of_their_own(tmp_path: Path) -> None:
    """Found 2026-12-07: a tag, entity or session "a/b" and one "a∕b" (U+2215 as written), or ".hidden"
    and "․hidden", were listed twice under one name: one was unreachable, a recall hit's path named the
    other memory's file, and `cp -a` of the mount failed ("File exists")."""
    env = base_env(tmp_path)
    build_store(tmp_path, [
        fact("s-1", "collision with a real slash", id="f-slash", tags=["a/b"], entity="a/b"),
        fact("s-2", "collision with a slash stand-in", id="f-standin", tags=["a\u2215b"], entity="a\u2215b"),
        {"type": "summary", "source_id": "h1", "session": ".hidden", "content": "the dotted session",
         "created_at": "2026-06-01T10:00:00Z"},
        {"type": "summary", "source_id": "h2", "session": "\u2024hidden", "content": "the stand-in session",
         "created_at": "2026-06-01T10:00:00Z"}], env)
    mount = start_mount(tmp_path, env)
    try:
        m = mount.path
        for directory in ("entities", "facts/by-tag", "sessions"):
            names = os.listdir(m / directory)
            assert len(names) == len(set(names)), (directory, names)
        assert "real slash" in (m / "entities" / "a\u2215b.md").read_text()
        assert "stand-in" in (m / "entities" / encode_value("a\u2215b", ".md")).read_text()
        assert os.listdir(m / "facts" / "by-tag" / encode_value("a\u2215b")) == [
            "collision-with-a-slash-stand-in--f-standin.md"]
        assert "dotted" in (m / "sessions" / "\u2024hidden" / "summary.md").read_text()
        assert "stand-in" in (m / "sessions" / encode_value("\u2024hidden") / "summary.md").read_text()
        q = m / "recall" / "stand-in session"
        hit = next(q / n for n in sorted(os.listdir(q)) if "the stand-in session" in (q / n).read_text())
        path = next(line.split(": ", 1)[1] for line in hit.read_text().splitlines() if line.startswith("path: "))
        assert "stand-in" in Path(path.strip('"')).read_text(), path
        copy = tmp_path / "copy"
        sh("cp", "-r", str(m / "sessions"), str(m / "entities"), str(copy.mkdir() or copy))
    finally:
        stop_mount(mount)


def test_recall_directory(sample: Mount) -> None:
    q = sample.path / "recall" / "flaky windows test"
    names = sh("ls", f"{q}/").stdout.split("\n")
    names = [n for n in names if n]
    assert names[-2:] == ["context.xml", "results.json"] or {"context.xml", "results.json"} <= set(names)
    hits = sorted(n for n in names if n.endswith(".md"))
    assert hits and hits[0].startswith("01-")
    top = front_matter(q / hits[0])
    for key in ("id", "table", "kind", "version", "created_at", "tags", "source_id", "score", "rank", "arms"):
        assert key in top
    assert top["rank"] == 1 and top["arms"] == ["lexical"]
    results = json.loads((q / "results.json").read_text())
    assert [h["id"] for h in results["hits"]] == [front_matter(q / h)["id"] for h in hits]
    assert results["degraded"] is True and results["degraded_reason"] == "off"
    assert (q / "context.xml").read_text().startswith("<memory ")
    # the CLI reaches the daemon and runs the same pipeline
    cli = json.loads(sample.cli("recall", "flaky windows test", "--format", "json").stdout)
    assert [h["id"] for h in cli["hits"]] == [h["id"] for h in results["hits"]]
    # inline options and the '/' stand-in
    two = [n for n in os.listdir(sample.path / "recall" / "flaky windows test k:2") if n.endswith(".md")]
    assert len(two) == 2
    slash = json.loads((sample.path / "recall" / "planning%2Fq3 support" / "results.json").read_text())
    assert slash["query"] == "planning/q3 support"
    # recall/ lists recent queries as links, which walks of the tree do not follow
    listed = os.listdir(sample.path / "recall")
    assert "flaky windows test" in listed
    assert all((sample.path / "recall" / n).is_symlink() for n in listed if n != "README.md")
    glob_rg = sh("bash", "-c", f"rg -l separators {sample.path}/recall/*/").stdout.split()
    assert any(p.endswith(".md") for p in glob_rg)
    assert sh("find", str(sample.path / "recall"), "-type", "f").stdout == f"{sample.path}/recall/README.md\n"
    assert sorted(sh("find", str(sample.path), "-type", "f").stdout.split()) == sorted(
        map(str, files_under(sample.path)))


def test_a_recall_finds_a_word_by_its_derived_forms(sample: Mount) -> None:
    """Porter stems "deploy" as "deploi" but "deployment" as "deploy": a recall for "deployment" did not
    find "Deploy with make release" (query/stem_fold.py)."""
    for query in ("deployment", "deployments procedure"):
        found = sh("bash", "-c", f"grep -l 'make release' '{sample.path}/recall/{query}/'*.md").stdout.splitlines()
        assert len(found) == 1 and front_matter(Path(found[0]))["id"] == "f-deploy", query


def test_no_hits_means_no_padding(sample: Mount) -> None:
    q = sample.path / "recall" / "zebra quantum xylophone"
    assert sorted(os.listdir(q)) == ["context.xml", "results.json"]
    assert json.loads((q / "results.json").read_text())["hits"] == []


def test_name_too_long(sample: Mount) -> None:
    long = "why " * 70
    proc = sh("ls", str(sample.path / "recall" / long) + "/", check=False)
    assert proc.returncode != 0 and "File name too long" in proc.stderr
    with pytest.raises(OSError) as exc:
        os.stat(sample.path / "recall" / long)
    assert exc.value.errno == errno.ENAMETOOLONG


def test_every_write_is_refused(sample: Mount) -> None:
    index = sample.path / "index.md"
    for cmd in (["touch", str(index)], ["touch", str(sample.path / "facts" / "new.md")],
                ["mkdir", str(sample.path / "facts" / "newdir")], ["rm", str(index)],
                ["mv", str(index), str(sample.path / "x.md")], ["rmdir", str(sample.path / "facts" / "by-tag")],
                ["ln", "-s", "x", str(sample.path / "link")], ["cp", "/etc/hostname", str(sample.path)],
                ["bash", "-c", f"echo hi >> {index}"], ["truncate", "-s", "0", str(index)]):
        proc = sh(*cmd, check=False)
        assert proc.returncode != 0 and "Read-only file system" in proc.stderr, (cmd, proc.stderr)
    with pytest.raises(OSError) as exc:
        os.open(index, os.O_RDWR)
    assert exc.value.errno == errno.EROFS


def test_tar_and_pathlib(sample: Mount, tmp_path: Path) -> None:
    archive = tmp_path / "tree.tar"
    sh("tar", "-c", "-f", str(archive), "-C", str(sample.path), ".")  # exit 0: nothing "changed as we read it"
    listed = [n for n in sh("tar", "-t", "-f", str(archive)).stdout.split("\n") if n and not n.endswith("/")]
    links = [n for n in listed if n.startswith("./recall/")]
    assert len(listed) - len(links) == sample.expected["files"]  # type: ignore[attr-defined]
    out = tmp_path / "x"
    out.mkdir()
    sh("tar", "-x", "-f", str(archive), "-C", str(out))
    assert (out / "index.md").read_bytes() == (sample.path / "index.md").read_bytes()
    md = list((sample.path / "history").rglob("v*.md"))
    assert len(md) == sample.expected["versions"]  # type: ignore[attr-defined]


def test_status_lists_the_mount(sample: Mount) -> None:
    info = sample.mount_info()
    assert info["health"] == "ok" and info["principal"] == f"acme/proj as {AGENT}"
    assert info["detail"]["unexpected_errors"] == 0
    assert info["detail"]["loop_thread_violations"] == 0
    text = sample.cli("status").stdout
    assert f"{sample.path}: ok" in text
    again = sample.cli("mount", str(sample.path), check=False)
    assert again.returncode == 1 and "already mounted" in again.stderr
    assert again.stderr.startswith("recallfs mount: ") and "Traceback" not in again.stderr  # one line, not a bug


# -- life cycle, ingest and big directories: each on its own store and mount ---------------------------
@pytest.fixture
def fresh(tmp_path: Path):
    env = base_env(tmp_path)
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    yield mount
    stop_mount(mount)


def test_a_removed_control_socket_is_bound_again(fresh: Mount, tmp_path: Path) -> None:
    """`rm <store>.sock` (a cleaner, a careless script): every `recallfs ingest` then took the store for
    unmounted and met its lock, and a `recallfs recall` waited 120 s for it. The daemon binds it again."""
    sock = Path(str(fresh.store) + ".sock")
    sock.unlink()
    assert wait_until(sock.exists, timeout=30)
    assert oct(sock.stat().st_mode & 0o777) == "0o600"
    data = write_jsonl(tmp_path / "again.jsonl", [fact("sock-1", "The socket came back", id="f-sock")])
    assert "through the mount daemon" in fresh.cli("ingest", str(data)).stdout
    assert any(n.endswith("--f-sock.md") for n in os.listdir(fresh.path / "facts"))


def test_a_deleted_store_file_refuses_writes_and_health_says_failing(fresh: Mount, tmp_path: Path) -> None:
    """`rm <store>` while mounted: the daemon served on and took ingests into a file nobody could reach
    (lost when it stopped), and health said ok. Writes are refused with the reason, and health fails."""
    fresh.store.unlink()
    data = write_jsonl(tmp_path / "lost.jsonl", [fact("lost-1", "This would be lost at unmount", id="f-lost")])
    refused = fresh.cli("ingest", str(data), check=False)
    assert refused.returncode == 1 and "was deleted while it was open" in refused.stderr, refused.stderr
    proc = subprocess.run(["cp", str(data), "inbox/lost.jsonl"], cwd=fresh.path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and "Read-only file system" in proc.stderr, proc.stderr  # the store's state: EROFS
    note = (fresh.path / "inbox" / ".rejected" / "lost.jsonl.md").read_text()
    assert "was deleted while it was open" in note and "once the store takes writes" in note, note
    status = fresh.cli("status", "--store", str(fresh.store), "--json", check=False)
    assert status.returncode == 1  # no store at the path: said, after the mounts
    mine = next(m for m in json.loads(status.stdout)["mounts"] if m["mountpoint"] == str(fresh.path))
    health = mine["detail"]["health"]
    assert health["state"] == "failing" and "was deleted while it was open" in health["problems"][0], health
    assert not any("f-lost" in n for n in os.listdir(fresh.path / "facts"))  # reads still serve
    assert not Path(str(fresh.store) + ".wal").exists()  # nothing a restored file would have replayed into it


def test_a_daemon_that_does_not_answer_is_named_at_once_and_umount_ends_it(fresh: Mount, tmp_path: Path) -> None:
    """A stopped (or hung) daemon: `recallfs recall` waited for an hour on its socket, and `recallfs umount`
    gave up after 30 s and left the mount, so `recallfs mount` refused the point. Now the CLI pings first
    and says so, and umount wakes a stopped daemon to its SIGTERM, so it unmounts cleanly (it used to wait
    30 s and kill it)."""
    pid = fresh.mount_info()["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        proc = fresh.cli("recall", "commit messages", check=False, timeout=120)
        assert proc.returncode == 1 and f"(pid {pid}) is stopped (SIGSTOP, or ^Z)" in proc.stderr, proc.stderr
        data = write_jsonl(tmp_path / "late.jsonl", [fact("late-1", "Sent to a stopped daemon", id="f-late")])
        proc = fresh.cli("ingest", str(data), check=False, timeout=120)
        assert proc.returncode == 1 and "so nothing was sent to it" in proc.stderr, proc.stderr
        said = fresh.cli("status", check=False, timeout=120).stdout
        assert f"stopped: the daemon (pid {pid}) is stopped (SIGSTOP, or ^Z): `kill -CONT {pid}` resumes it" in said
        gone = fresh.cli("umount", str(fresh.path), timeout=120).stdout
        assert gone.strip() == f"unmounted {fresh.path}: stopped the daemon (pid {pid})", gone
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert not is_mounted(fresh.path)
    again = start_mount(fresh.path.parent, fresh.env)
    assert "maya-prefers-short-commit-messages--f-pref.md" in os.listdir(again.path / "facts")


def test_umount_kills_a_daemon_that_does_not_stop_on_sigterm(tmp_path: Path) -> None:
    """The hung case: a real process that ignores SIGTERM (and is woken by SIGCONT all the same) is
    killed once the stop timeout passes, and umount says so."""
    from recallfs.mount.lifecycle import stop_daemon

    hung = subprocess.Popen([sys.executable, "-c", "import signal, sys, time\n"
                             "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n"
                             "time.sleep(600)"], stdout=subprocess.PIPE, text=True)
    try:
        assert hung.stdout is not None and hung.stdout.readline() == "ready\n"
        said = stop_daemon(hung.pid, str(tmp_path / "log"), stop_timeout=1.0)
        assert said.startswith(f"killed the daemon (pid {hung.pid}), which did not stop in 1 s"), said
        assert hung.wait(timeout=10) == -signal.SIGKILL
    finally:
        hung.kill()
        hung.wait()
        hung.stdout.close()  # type: ignore[union-attr]


def test_ingest_while_mounted_shows_at_once(fresh: Mount, tmp_path: Path) -> None:
    m = fresh.path
    pref_old = m / "facts" / "maya-prefers-short-commit-messages--f-pref.md"
    old_size = pref_old.stat().st_size
    before = os.listdir(m / "recall" / "kangaroo pipeline")  # no word of it in the store yet
    assert sorted(before) == ["context.xml", "results.json"]
    index_before = front_matter(m / "index.md")
    transcript = m / "sessions" / "2026-06-01-ci" / "transcript.md"
    transcript_before = transcript.read_text()

    data = write_jsonl(tmp_path / "more.jsonl", [
        fact("kangaroo-1", "The kangaroo deployment pipeline needs a manual approval", id="f-kangaroo",
             kind="procedure", tags=["deploy"]),
        fact("pref-1", "Maya prefers commit messages under fifty characters", id="f-pref", kind="preference",
             entity="maya"),
        turn("2026-06-01-ci", 4, "maya", "One more thing: the kangaroo job is flaky too."),
    ])
    out = fresh.cli("ingest", str(data)).stdout
    assert "through the mount daemon" in out

    # No waiting: the daemon answers the ingest only after the kernel dropped what it changed.
    names = os.listdir(m / "facts")
    assert "the-kangaroo-deployment-pipeline-needs-a-manual--f-kangaroo.md" in names
    assert pref_old.name not in names and not pref_old.exists()
    new_pref = m / "facts" / "maya-prefers-commit-messages-under-fifty--f-pref.md"
    assert new_pref.stat().st_size == len(new_pref.read_bytes()) != old_size
    assert sorted(os.listdir(m / "history" / "f-pref")) == ["v1.md", "v2.md"]
    hits = [n for n in os.listdir(m / "recall" / "kangaroo pipeline") if n.endswith(".md")]
    assert hits and "kangaroo" in hits[0]
    assert front_matter(m / "index.md")["facts"] == index_before["facts"] + 1
    after = transcript.read_text()
    assert after != transcript_before and "kangaroo job is flaky" in after
    assert transcript.stat().st_size == len(after.encode())
    assert "kangaroo" in fresh.cli("recall", "kangaroo").stdout
    assert fresh.mount_info()["detail"]["unexpected_errors"] == 0


def test_bad_ingest_is_refused_and_the_mount_stays(fresh: Mount, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "fact", "source_id": "x", "content": "no date"}\n')
    proc = fresh.cli("ingest", str(bad), check=False)
    assert proc.returncode == 1 and "nothing written" in proc.stderr and "bad.jsonl:1" in proc.stderr
    assert len([n for n in os.listdir(fresh.path / "facts") if n.endswith(".md")]) == len(SAMPLE_FACT_IDS)


def test_kill_9_then_recovery(fresh: Mount) -> None:
    pid = fresh.mount_info()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text())
    with pytest.raises(OSError) as exc:
        os.listdir(fresh.path)
    assert exc.value.errno in (errno.ENOTCONN, errno.ECONNABORTED)  # "Transport endpoint is not connected"
    assert fresh.mount_info()["health"].startswith("dead")
    # the next mount on that point cleans up and serves again
    fresh.cli("mount", str(fresh.path))
    assert "index.md" in os.listdir(fresh.path)
    assert fresh.mount_info()["health"] == "ok"
    # and umount cleans up a dead mount too
    pid = fresh.mount_info()["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text())
    out = fresh.cli("umount", str(fresh.path)).stdout
    assert "detached" in out
    assert not is_mounted(fresh.path)
    assert os.listdir(fresh.path) == []


def test_an_ingest_whose_daemon_dies_before_answering_says_so_and_loses_nothing(fresh: Mount, tmp_path: Path) -> None:
    """A crash in the middle of `recallfs ingest` through the mount. The file is a FIFO: the CLI reads it
    once, then the daemon opens it again and waits there for a writer, so the test knows the request is
    in the daemon's hands when it kills it. The CLI says the ingest's fate is unknown and how to finish
    it; the same ingest again writes it, once, and once more writes nothing."""
    import threading

    line = json.dumps(fact("heron-1", "The heron cluster moved to rack nine", id="f-heron")) + "\n"
    fifo = tmp_path / "heron.jsonl"
    os.mkfifo(fifo)

    def feed() -> None:  # the CLI's own read of the file
        with open(fifo, "w") as f:
            f.write(line)
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    pid = fresh.mount_info()["pid"]
    cli = subprocess.Popen([RECALLFS, "ingest", str(fifo)], env=fresh.env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)

    def holds_fifo(proc: int) -> bool:
        for fd in Path(f"/proc/{proc}/fd").iterdir():
            try:
                if os.readlink(fd) == str(fifo):
                    return True
            except OSError:
                continue
        return False

    held: list[int] = []

    def daemon_reading() -> bool:
        """The CLI's own read is over and a reader waits on the FIFO: the daemon (a write end opens
        without blocking only while a reader is there; it is kept open, so the daemon's read waits on)."""
        if cli.poll() is not None:
            return True
        if holds_fifo(cli.pid):
            return False
        try:
            held.append(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return False
        return True
    try:
        feeder.join(timeout=60)  # the CLI has opened the FIFO and been given the line
        assert wait_until(daemon_reading, timeout=60)
        assert cli.poll() is None, cli.communicate()
    finally:
        os.kill(pid, signal.SIGKILL)
        for fd in held:
            os.close(fd)
    out, err = cli.communicate(timeout=60)
    assert cli.returncode == 1, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"whether {fifo} was ingested is unknown: run the same ingest again" in err, err
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text())
    fresh.cli("umount", str(fresh.path))
    fifo.unlink()
    data = write_jsonl(tmp_path / "heron.jsonl", [json.loads(line)])
    assert "1 written" in fresh.cli("ingest", str(data)).stdout
    again = fresh.cli("ingest", str(data)).stdout
    assert "0 written" in again and "1 unchanged" in again


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signals_unmount_cleanly(tmp_path: Path, signum: int) -> None:
    env = base_env(tmp_path)
    build_store(tmp_path, SAMPLE, env)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    (tmp_path / "run").mkdir()
    log = tmp_path / "daemon.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(RECALLFS), "mount", "--foreground", str(mnt)], env={**os.environ, **env},
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        assert wait_until(lambda: is_mounted(mnt) and (tmp_path / "store.duckdb.sock").exists(), timeout=60)
        assert "index.md" in os.listdir(mnt)
        proc.send_signal(signum)
        assert proc.wait(timeout=30) == 0, log.read_text()
        assert "unmounting" in log.read_text()
        assert not is_mounted(mnt)
        assert not (tmp_path / "store.duckdb.sock").exists()
        assert not list((tmp_path / "run" / "recallfs" / "mounts").glob("*.json"))
    finally:
        if proc.poll() is None:
            proc.kill()
        if is_mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], capture_output=True)


def test_umount_of_nothing_and_mount_of_a_missing_store(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    (tmp_path / "mnt").mkdir()
    from conftest import run_cli

    proc = run_cli("umount", str(tmp_path / "mnt"), env=env)
    assert proc.returncode == 1 and "not mounted" in proc.stderr
    proc = run_cli("mount", str(tmp_path / "mnt"), env=env)
    assert proc.returncode == 1 and "no store at" in proc.stderr
    assert proc.stderr.startswith("recallfs mount: ") and proc.stderr.count("\n") == 1  # MountError, one line


def test_listings_cut_at_max_rows(tmp_path: Path) -> None:
    env = base_env(tmp_path, RECALLFS_MAX_ROWS="2")
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    try:
        names = os.listdir(mount.path / "facts")
        assert "_truncated.md" in names and len([n for n in names if "--" in n]) == 2
        assert "shows the newest 2 of 4" in (mount.path / "facts" / "_truncated.md").read_text()
        # every fact still opens by name
        for path in ("maya-prefers-short-commit-messages--f-pref.md",
                     "ci-runs-on-github-actions-with-cargo-nextest--f-ci.md",
                     "deploy-with-make-release-from-the-main-branch--f-deploy.md"):
            assert (mount.path / "facts" / path).read_text().startswith("---\n")
        assert "facts/" in front_matter(mount.path / "index.md")["truncated"]
    finally:
        stop_mount(mount)


def test_turns_past_a_cut_listing_open_by_name(tmp_path: Path) -> None:
    """turns/ shows a session's newest max_rows turns and _truncated.md says the others open by name;
    they did not (ENOENT), and recall hits named them in their `path:`. Two turns share a seq and speaker,
    so one name is told apart by id, which the lookup must work out as the listing does."""
    records = [turn("long-call", i, "ana" if i % 2 else "bo", f"point {i} of the long call", id=f"t-{i:02d}",
                    created_at=f"2026-05-02T10:{i:02d}:00") for i in range(12)]
    records.append(turn("long-call", 3, "ana", "point 3 again", id="t-dup", source_id="long-call#3b",
                        created_at="2026-05-02T10:30:00"))
    build_store(tmp_path, records, base_env(tmp_path))
    full = {}
    mount = start_mount(tmp_path, base_env(tmp_path, RECALLFS_MAX_ROWS="100000"), name="full")
    try:
        turns = mount.path / "sessions" / "long-call" / "turns"
        full = {n: (turns / n).read_bytes() for n in os.listdir(turns)}
    finally:
        stop_mount(mount)
    assert len(full) == 13 and any("t-dup" in n for n in full), sorted(full)
    mount = start_mount(tmp_path, base_env(tmp_path, RECALLFS_MAX_ROWS="4"), name="cut")
    try:
        turns = mount.path / "sessions" / "long-call" / "turns"
        listed = os.listdir(turns)
        assert "_truncated.md" in listed and len(listed) == 5, listed
        for name, data in full.items():  # every turn, listed or not, with the bytes of the uncut mount
            assert (turns / name).read_bytes() == data, name
            assert os.stat(turns / name).st_size == len(data)
        with pytest.raises(FileNotFoundError):
            (turns / "0099-ana.md").read_bytes()
        hits = mount.path / "recall" / "point 1 of the long call"
        path = next(line for line in sorted(hits.glob("01-*"))[0].read_text().splitlines() if line.startswith("path:"))
        target = Path(path.split("path: ", 1)[1])
        assert target.parent == turns and target.read_bytes() == full[target.name]
    finally:
        stop_mount(mount)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("big")
    env = base_env(tmp, RECALLFS_MAX_ROWS="20000")
    records = [fact(f"bulk-{i}", f"bulk fact number {i} about topic {i % 97}", id=f"f-bulk-{i:05d}",
                    kind="bulk", created_at=f"2026-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z")
               for i in range(6000)]
    build_store(tmp, records, env, name="bulk.jsonl")
    mount = start_mount(tmp, env)
    yield mount
    stop_mount(mount)


def test_readdir_of_6000_entries_with_ls_and_scandir(big: Mount) -> None:
    facts = big.path / "facts"
    by_ls = sh("ls", "-1", "-f", str(facts)).stdout.split("\n")
    by_ls = [n for n in by_ls if n and n not in (".", "..")]
    with os.scandir(facts) as it:
        by_scandir = [e.name for e in it]
    assert len(by_ls) == len(set(by_ls)) == 6002
    assert sorted(by_ls) == sorted(by_scandir) == sorted(os.listdir(facts))
    ids = {n[:-3].split("--", 1)[1] for n in by_scandir if n.endswith(".md")}
    assert ids == {f"f-bulk-{i:05d}" for i in range(6000)}
    kind_dir = facts / "by-kind" / "bulk"
    assert len(os.listdir(kind_dir)) == 6000
    assert sh("bash", "-c", f"ls {kind_dir} | wc -l").stdout.strip() == "6000"
    assert int(sh("bash", "-c", f"find {big.path}/history -type f | wc -l").stdout) == 6000
    assert sh("grep", "-rl", "topic 96$", str(kind_dir)).stdout.count("\n") == len(range(96, 6000, 97))


def test_python_module_entry_point() -> None:
    proc = subprocess.run([sys.executable, "-m", "recallfs.mount.cli", "umount", "--help"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "dead mount" in proc.stdout


def test_rg_is_installed() -> None:
    assert shutil.which("rg"), "ripgrep is needed by the mount tests (apt-get install ripgrep)"
