"""inbox/ on a real mount (issue 17): a file written with cp, echo >, tee, a here-document or Python's open
is remembered at its close, by the mount's agent; a refused file fails its close with EINVAL and leaves
its reason in inbox/.rejected/; nothing else in the tree becomes writable."""

from __future__ import annotations

import errno
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mount_helpers import AGENT, SAMPLE, Mount, base_env, build_store, needs_fuse, start_mount, stop_mount, wait_until

from conftest import run_cli

pytestmark = [needs_fuse, pytest.mark.mount]


def sh(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("inbox")
    env = base_env(tmp)
    build_store(tmp, SAMPLE, env)
    mount = start_mount(tmp, env)
    yield mount
    stop_mount(mount)


def run_python(script: str, path: Path) -> None:
    """Run `script` with `path` as its argument; it must succeed."""
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def counts(mount: Mount) -> dict:
    return json.loads(mount.cli("status", "--store", str(mount.store), "--json").stdout)["workspaces"]


def facts_named(mount: Mount, words: str) -> list[str]:
    return [n for n in os.listdir(mount.path / "facts") if words in n]


@pytest.mark.parametrize(("tool", "script", "words"), [
    ("echo", "echo 'The staging DB moved to pg-delta on 2026-11-20' > inbox/db.md", "staging-db-moved-to-pg-delta"),
    ("cp", "printf 'The release train leaves on Thursdays\\n' > {tmp}/src.md && cp {tmp}/src.md inbox/",
     "release-train-leaves-on-thursdays"),
    ("tee", "echo 'Lunch is at noon in the atrium' | tee inbox/lunch.md > /dev/null", "lunch-is-at-noon"),
    ("heredoc", "cat > inbox/pager.md <<'EOF'\n---\nkind: procedure\ntags: [oncall]\n---\n"
                "Page the on-call engineer through the rota bot\nEOF", "page-the-on-call-engineer"),
    ("python", f"{sys.executable} -c \"open('inbox/py.md', 'w').write('Backups run nightly at 02:00 UTC')\"",
     "backups-run-nightly"),
])
def test_a_written_file_is_a_memory_when_its_writer_returns(mounted: Mount, tmp_path: Path, tool, script, words):
    proc = sh(script.format(tmp=tmp_path), mounted.path)
    assert proc.returncode == 0, proc.stderr
    # the close returned after the commit: the fact is there at once, by the mount's agent, and inbox/ is empty
    found = facts_named(mounted, words)
    assert len(found) == 1, os.listdir(mounted.path / "facts")
    text = (mounted.path / "facts" / found[0]).read_text()
    assert f"agent: {AGENT}" in text
    assert [n for n in os.listdir(mounted.path / "inbox") if not n.startswith(".")] == []


def test_recall_lists_a_remembered_file_first(mounted: Mount) -> None:
    sh("echo 'The coffee machine on floor 3 is fixed' > inbox/coffee.md", mounted.path)
    hits = sorted(os.listdir(mounted.path / "recall" / "is the coffee machine on floor 3 fixed"))
    assert hits[0].startswith("01-fact-the-coffee-machine"), hits


def test_a_refused_file_fails_its_close_and_says_why(mounted: Mount, tmp_path: Path) -> None:
    before = counts(mounted)
    bad = tmp_path / "bad.md"
    bad.write_text("---\nkind: fact\ntags: [unclosed\n---\nThe body.\n")
    proc = sh(f"cp {bad} inbox/bad.md", mounted.path)
    assert proc.returncode != 0 and "Invalid argument" in proc.stderr, proc.stderr
    with pytest.raises(OSError) as info:
        with open(mounted.path / "inbox" / "claim.md", "w") as fh:
            fh.write("---\nagent: someone-else\n---\nI claim to be someone else.\n")
    assert info.value.errno == errno.EINVAL
    rejected = mounted.path / "inbox" / ".rejected"
    assert sorted(os.listdir(rejected)) == ["bad.md", "claim.md"]
    assert "line 3" in (rejected / "bad.md").read_text()
    assert f"writes as '{AGENT}', not 'someone-else'" in (rejected / "claim.md").read_text()
    assert counts(mounted) == before  # nothing was written
    assert not facts_named(mounted, "claim-to-be-someone-else")


@pytest.mark.parametrize(("when", "why"), [
    ("'9999-12-31T23:00:00-05:00'", "is outside the years 1900-2200"),
    ("'0001-01-01T00:30:00+01:00'", "is outside the years 1900-2200"),
    # found 2026-12-07: YAML's own date reader raised a bare ValueError for these (unquoted)
    ("2026-02-30", "is not an ISO 8601 date"), ("2026-06-01T10:00:00+25:00", "is not an ISO 8601 date"),
])
def test_a_date_past_the_calendar_once_in_utc_is_refused_by_name_and_health_stays_ok(mounted: Mount,
                                                                                    when: str, why: str) -> None:
    """Converting these to UTC leaves the calendar: once an OverflowError, an "internal error" refusal
    and a failing health verdict. A day February has not was the same through YAML."""
    name = f"edge{when[:5].strip(chr(39))}{len(when)}.md"
    with pytest.raises(OSError) as info:
        with open(mounted.path / "inbox" / name, "w") as fh:
            fh.write(f"---\ncreated_at: {when}\n---\nA fact dated at the end of time.\n")
    assert info.value.errno == errno.EINVAL
    said = (mounted.path / "inbox" / ".rejected" / name).read_text()
    assert "created_at" in said and why in said and "internal error" not in said and "line 2" in said, said
    health = json.loads(mounted.cli("status", "--json").stdout)["mounts"][0]["detail"]["health"]
    assert health["state"] == "ok", health


def test_a_writer_killed_mid_file_stores_nothing(mounted: Mount) -> None:
    before = counts(mounted)
    writer = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                               "f = open(sys.argv[1], 'w'); f.write('half of a memory'); f.flush()\n"
                               "print('written', flush=True); time.sleep(60)", str(mounted.path / "inbox" / "half.md")],
                              stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
    writer.send_signal(signal.SIGKILL)
    writer.wait(30)
    writer.stdout.close()
    assert wait_until(lambda: (mounted.path / "inbox" / ".rejected" / "half.md").exists())
    assert "killed by signal 9" in (mounted.path / "inbox" / ".rejected" / "half.md").read_text()
    assert counts(mounted) == before


def test_two_writers_of_one_name_at_once_each_store_their_own(mounted: Mount) -> None:
    """A second writer that creates (truncates) a name another is still writing starts its own draft: the
    first close stores the first writer's words, not the second's, and the second's close stores its own."""
    path = mounted.path / "inbox" / "same.md"
    first = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(first, b"The alpha-lantern note came first\n")
    second = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(second, b"The beta-lantern note came second\n")
    os.close(first)
    assert facts_named(mounted, "alpha-lantern")  # what the first writer wrote, at its own close
    assert os.listdir(mounted.path / "inbox") == [".rejected", "same.md"]  # the second is still writing
    os.close(second)
    assert facts_named(mounted, "beta-lantern")
    assert os.listdir(mounted.path / "inbox") == [".rejected"]
    assert not os.path.exists(mounted.path / "inbox" / ".rejected" / "same.md")


def test_sixteen_shells_writing_one_name_at_once_lose_nothing(mounted: Mount) -> None:
    """Agents write the same name (`notes.md`) at the same moment. Before drafts, eight shells lost one
    note and left a refusal ("the memory has no text") while every echo returned 0."""
    script = ("for i in $(seq 1 16); do (echo \"Shell $i says the yak-$i window is Friday\" > inbox/notes.md"
              " || echo \"failed $i\" >&2) & done; wait")
    proc = sh(script, mounted.path)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    stored = {int(n.split("-yak-")[1].split("-")[0]) for n in facts_named(mounted, "-yak-")}
    assert stored == set(range(1, 17)), sorted(stored)
    assert os.listdir(mounted.path / "inbox") == [".rejected"]
    assert "notes.md" not in os.listdir(mounted.path / "inbox" / ".rejected")


def test_a_slot_written_again_supersedes_and_history_shows_the_chain(mounted: Mount) -> None:
    for text in ("The build cache lives on nfs-1", "The build cache lives on nfs-2"):
        proc = sh(f"printf -- '---\\nslot: build-cache\\nentity: cache\\n---\\n{text}\\n' > inbox/cache.md",
                  mounted.path)
        assert proc.returncode == 0, proc.stderr
        time.sleep(1.1)  # created_at has second resolution: the later write is the newer version
    names = facts_named(mounted, "build-cache-lives-on")
    assert len(names) == 1 and "nfs-2" in names[0], names
    mem_id = names[0].rsplit("--", 1)[1].removesuffix(".md")
    assert len(os.listdir(mounted.path / "history" / mem_id)) == 2


def test_a_new_version_of_a_correction_shows_in_what_it_corrected_at_once(mounted: Mount) -> None:
    """f-desk2 replaced f-desk; f-desk's version file, read (and cached by the kernel) before, names
    f-desk2/v1. Writing f-desk2 again changes what f-desk's file says (f-desk2/v2), though f-desk itself
    changed neither version nor currentness: a write invalidates the memories linked to what it changed."""
    def write(text: str) -> None:
        assert sh(f"printf -- '{text}' > inbox/desk.md", mounted.path).returncode == 0

    write("---\\nid: f-desk\\n---\\nThe oak desk is in the hall\\n")
    write("---\\nid: f-desk2\\nsupersedes: f-desk\\n---\\nThe oak desk moved to the attic\\n")
    old = mounted.path / "history" / "f-desk" / "v1.md"
    assert "superseded_by: f-desk2/v1" in old.read_text()
    write("---\\nid: f-desk2\\nsupersedes: f-desk\\n---\\nThe oak desk moved to the cellar\\n")
    assert "superseded_by: f-desk2/v2" in old.read_text(), old.read_text()


def test_a_link_to_no_fact_is_refused_and_one_to_a_fact_of_the_same_file_is_kept(mounted: Mount,
                                                                                   tmp_path: Path) -> None:
    """Found 2026-12-07 by a soak: `supersedes: f-db-hots-2` (a typo) was stored as written, retired
    nothing, and the close returned 0, so the old fact stayed current beside its correction unnoticed
    (query/inbox_links.py)."""
    def cp(name: str, text: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / name).write_text(text)
        return sh(f"cp {tmp_path / name} inbox/", mounted.path)

    assert cp("d2.md", "---\nid: f-dbx-2\n---\nThe dbx primary is db2.\n").returncode == 0
    proc = cp("d4.md", "---\nid: f-dbx-4\nsupersedes: f-dbx-hots-2\n---\nThe dbx primary is db4.\n")
    assert proc.returncode != 0 and "Invalid argument" in proc.stderr, proc.stderr
    note = (mounted.path / "inbox" / ".rejected" / "d4.md").read_text()
    assert "supersedes: f-dbx-hots-2: no fact you can read has this id" in note, note
    assert not facts_named(mounted, "dbx-primary-is-db4")
    assert sh("rm inbox/.rejected/d4.md", mounted.path).returncode == 0
    assert cp("d4.md", "---\nid: f-dbx-4\nsupersedes: f-dbx-2\n---\nThe dbx primary is db4.\n").returncode == 0
    assert facts_named(mounted, "dbx-primary-is-db4") and not facts_named(mounted, "dbx-primary-is-db2")
    # a link to a fact written in the same file: there once the file is stored
    lines = [{"type": "fact", "id": "f-dbx-6", "content": "The dbx primary is db6.", "supersedes": "f-dbx-5"},
             {"type": "fact", "id": "f-dbx-5", "content": "The dbx primary is db5.", "supersedes": "f-dbx-4"}]
    proc = cp("d56.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    assert proc.returncode == 0, proc.stderr
    dbx = [n for n in os.listdir(mounted.path / "facts") if "dbx-primary" in n]
    assert len(dbx) == 1 and "db6" in dbx[0], dbx


def test_a_recall_right_after_a_write_names_its_turn_hits_files_in_the_tree(mounted: Mount) -> None:
    """Right after a write the daemon has not built the new generation's catalog, and a recall names its
    turn hits' files from those sessions' turns alone: each name must be the tree's file of that very
    turn, two turns of one seq and speaker told apart as sessions/<s>/turns/ lists them."""
    assert sh("echo 'The flaky separator test was fixed on Friday' > inbox/sep.md", mounted.path).returncode == 0
    run = mounted.path / "recall" / "second turn with the same seq and speaker to test names k:20"
    checked = set()
    for name in sorted(os.listdir(run)):
        if "-turn-" not in name:
            continue
        front, body = (run / name).read_text().split("\n---\n", 1)
        path = next(line.split(": ", 1)[1] for line in front.splitlines() if line.startswith("path: "))
        assert body.strip().splitlines()[-1] in Path(path).read_text(), (name, path)
        checked.add(path)
    ci = [p for p in checked if "/2026-06-01-ci/" in p]
    assert len(ci) >= 2, checked  # both turns of seq 2, under two names


def test_a_fact_hits_path_still_opens_after_a_newer_version(mounted: Mount) -> None:
    """Found 2026-12-07: a fact hit's `path:` named its file in facts/, whose name holds the text, so the
    next version of the memory (a slot written again) made every path from earlier recalls ENOENT. It names
    the version's file in history/ now, which stays and says what replaced it."""
    assert sh("printf -- '---\\nslot: ferry.time\\n---\\nThe harbour ferry leaves at eight\\n' > inbox/f.md",
              mounted.path).returncode == 0
    hit = mounted.path / "recall" / "harbour ferry leaves k:1"
    (name,) = [n for n in os.listdir(hit) if n.startswith("01-")]
    front, body = (hit / name).read_text().split("\n---\n", 1)
    path = Path(next(line.split(": ", 1)[1] for line in front.splitlines() if line.startswith("path: ")))
    assert path.read_text().split("\n---\n", 1)[1] == body and "current: true" in path.read_text()
    assert sh("printf -- '---\\nslot: ferry.time\\n---\\nThe harbour ferry leaves at nine\\n' > inbox/f.md",
              mounted.path).returncode == 0
    assert "leaves at eight" in path.read_text() and "current: false" in path.read_text()
    assert "superseded_by: " in path.read_text() and "superseded_by: null" not in path.read_text()


def test_a_front_matter_key_given_twice_is_refused_with_its_line(mounted: Mount) -> None:
    """Found 2026-12-08: the last `kind:` was kept silently and the close succeeded."""
    before = counts(mounted)
    proc = sh("printf -- '---\\nkind: decision\\nkind: fact\\n---\\nTwice said\\n' > inbox/twice.md", mounted.path)
    assert proc.returncode == 0, proc.stderr  # bash ignores a failed close after a builtin (README)
    with pytest.raises(OSError) as info:
        with open(mounted.path / "inbox" / "twice2.md", "w") as fh:
            fh.write("---\nkind: decision\ntags:\n  - {k: 1, k: 2}\n---\nTwice said\n")
    assert info.value.errno == errno.EINVAL
    rejected = mounted.path / "inbox" / ".rejected"
    said = (rejected / "twice.md").read_text()
    assert "the key 'kind' is given twice" in said and "line 3" in said, said
    said = (rejected / "twice2.md").read_text()
    assert "the key 'k' is given twice" in said and "line 4" in said, said
    assert counts(mounted) == before and not facts_named(mounted, "twice-said")


def test_a_long_name_s_note_fits_in_255_bytes_and_is_found_by_its_listed_name(mounted: Mount) -> None:
    """Found 2026-12-08: `<name>.md` of a 255-byte name was listed as a 258-byte name, which `cp -a` and
    tar of the mount failed on. Two long names that differ only at their ends keep distinct notes."""
    names = ["j" * 249 + ".jsonl", "j" * 248 + "k.jsonl"]
    rejected = mounted.path / "inbox" / ".rejected"
    for name in names:
        with pytest.raises(OSError) as info:
            with open(mounted.path / "inbox" / name, "w") as fh:
                fh.write("{not json\n")
        assert info.value.errno == errno.EINVAL
    notes = [n for n in os.listdir(rejected) if n.startswith("j" * 200)]
    assert len(notes) == 2 and all(len(n.encode()) <= 255 and n.endswith(".md") for n in notes), notes
    said = {(rejected / n).read_text().splitlines()[0] for n in notes}
    assert said == {f"# {name}: refused" for name in names}
    proc = sh(f"cat inbox/.rejected/{notes[0]} > /dev/null && rm inbox/.rejected/{notes[0]}", mounted.path)
    assert proc.returncode == 0, proc.stderr
    assert [n for n in os.listdir(rejected) if n.startswith("j" * 200)] == notes[1:]
    os.remove(rejected / notes[1])


def test_jsonl_and_limits(mounted: Mount, tmp_path: Path) -> None:
    line = {"type": "fact", "source_id": "j-1", "created_at": "2026-11-01", "content": "Written as JSONL lines"}
    proc = sh(f"echo '{json.dumps(line)}' > inbox/batch.jsonl", mounted.path)
    assert proc.returncode == 0 and facts_named(mounted, "written-as-jsonl-lines"), proc.stderr
    big = tmp_path / "big.md"
    big.write_text("x" * (1 << 20) + "y")
    proc = sh(f"cp {big} inbox/big.md", mounted.path)
    assert proc.returncode != 0 and "File too large" in proc.stderr, proc.stderr  # EFBIG
    for name in (".hidden.md",):
        with pytest.raises(OSError) as info:
            open(mounted.path / "inbox" / name, "w").close()
        assert info.value.errno == errno.EINVAL


def test_an_empty_file_touched_stores_nothing_and_leaves(mounted: Mount) -> None:
    before = counts(mounted)
    proc = sh("touch inbox/empty.md", mounted.path)
    assert proc.returncode == 0, proc.stderr
    # it leaves at its last close (RELEASE, which the kernel sends after close() returns)
    assert wait_until(lambda: "empty.md" not in os.listdir(mounted.path / "inbox"))
    assert counts(mounted) == before


def test_everything_outside_inbox_stays_read_only(mounted: Mount) -> None:
    for script in ("touch facts/new.md", "echo x > index.md", "mkdir sessions/new", "echo x > recall/README.md",
                   "rm -f facts/*.md", "echo x > new-at-root.md"):
        proc = sh(script, mounted.path)
        assert proc.returncode != 0 and "Read-only file system" in proc.stderr, (script, proc.stderr)
    proc = sh("echo x > inbox/.rejected/note.md", mounted.path)
    assert proc.returncode != 0, proc.stderr


def test_an_inbox_process_that_dies_is_started_again_and_health_says_so(tmp_path: Path) -> None:
    """kill -9 of the inbox's own process (the OOM killer, an operator): inbox/ was left as a dead FUSE
    mount (ENOTCONN for every write, and `find` over the mount failed on it) while health said ok. The
    daemon reports it at once (degraded), detaches the dead mount, starts the inbox again, and health then
    notes the restart."""
    env = base_env(tmp_path)
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    try:
        def health() -> dict:
            return json.loads(mount.cli("status", "--json").stdout)["mounts"][0]["detail"]["health"]

        pid = int(subprocess.run(["pgrep", "-f", f"inbox_main .* {mount.path}/inbox"], capture_output=True,
                                 text=True).stdout.split()[0])
        os.kill(pid, signal.SIGKILL)
        seen = health()  # reported at once, or already started again (a restart takes about a second)
        assert (seen["state"] == "degraded" and "inbox/ takes no writes" in seen["problems"][0]) or seen["notes"], seen

        def remembered() -> bool:
            proc = sh("echo 'The inbox came back after a kill' > inbox/back.md", mount.path)
            return proc.returncode == 0
        assert wait_until(remembered, timeout=60)
        assert facts_named(mount, "the-inbox-came-back-after-a-kill")
        assert subprocess.run(["find", str(mount.path)], capture_output=True, timeout=120).returncode == 0
        after = health()
        assert after["state"] == "ok" and any("started again 1 time(s)" in n for n in after["notes"]), after
    finally:
        stop_mount(mount)


def test_a_stopped_inbox_process_is_reported_until_it_runs_again(tmp_path: Path) -> None:
    """Found 2026-12-07: with the inbox's process stopped (SIGSTOP, ^Z in a debugger) every write to
    inbox/ and any walk that stats it hung, while `recallfs status` and index.md said ok."""
    env = base_env(tmp_path)
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    pid = int(subprocess.run(["pgrep", "-f", f"inbox_main .* {mount.path}/inbox"], capture_output=True,
                             text=True).stdout.split()[0])
    try:
        def health() -> dict:
            return json.loads(mount.cli("status", "--json").stdout)["mounts"][0]["detail"]["health"]

        os.kill(pid, signal.SIGSTOP)
        seen = health()
        assert seen["state"] == "degraded" and f"kill -CONT {pid}" in " ".join(seen["problems"]), seen
        assert wait_until(lambda: "kill -CONT" in (mount.path / "index.md").read_text(), timeout=30)
        os.kill(pid, signal.SIGCONT)
        assert wait_until(lambda: health()["state"] == "ok", timeout=30)
        assert sh("echo 'The inbox ran again' > inbox/again.md", mount.path).returncode == 0
    finally:
        os.kill(pid, signal.SIGCONT)
        stop_mount(mount)


def test_a_policy_that_denies_writes_gets_eacces(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    build_store(tmp_path, SAMPLE, env)
    run_cli("policy", "set", "--deny-writes", env=env, check=True)  # (a policy is set while unmounted)
    mount = start_mount(tmp_path, env)
    try:
        before = counts(mount)
        with pytest.raises(OSError) as info:
            with open(mount.path / "inbox" / "denied.md", "w") as fh:
                fh.write("A memory this agent may not write")
        assert info.value.errno == errno.EACCES
        assert "denies writes" in (mount.path / "inbox" / ".rejected" / "denied.md").read_text()
        assert counts(mount) == before and not facts_named(mount, "may-not-write")
    finally:
        stop_mount(mount)


def test_a_full_disk_under_the_store_is_enospc_and_the_note_does_not_blame_the_file(tmp_path: Path, disk: Path) -> None:
    """The store on a real, full tmpfs: the close of an inbox/ file answered EINVAL ("Invalid argument")
    and its note said "Fix the file and write it again", though nothing was wrong with the file. Now the
    close says ENOSPC, the note says to write it again once the disk has room, and that works."""
    from fault_helpers import fill

    env = base_env(tmp_path, RECALLFS_STORE=str(disk / "store.duckdb"))
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    try:
        before = counts(mount)
        filler = fill(disk, 0)
        note = "---\nkind: fact\n---\nThe staging database moved to pg-delta on a full disk.\n"
        with pytest.raises(OSError) as info:
            with open(mount.path / "inbox" / "full.md", "w") as fh:
                fh.write(note)
        assert info.value.errno == errno.ENOSPC
        said = (mount.path / "inbox" / ".rejected" / "full.md").read_text()
        assert "is full" in said and "Write it again once the disk holding the store has room." in said, said
        assert "Fix the file" not in said
        assert counts(mount) == before
        filler.unlink()
        (mount.path / "inbox" / "full.md").write_text(note)
        assert facts_named(mount, "staging-database-moved-to-pg-delta")
    finally:
        stop_mount(mount)


def test_the_issue_s_example_as_printed(mounted: Mount) -> None:
    """issue 17's must-show, as the README prints it: the write returns after the commit, the recall lists
    it first, and its file names the writer's agent."""
    proc = sh('echo "The staging DB moved to pg-delta on 2026-11-20" > inbox/db.md', mounted.path)
    assert proc.returncode == 0, proc.stderr
    listed = sorted(os.listdir(mounted.path / "recall" / "where is the staging db"))
    assert listed[0].startswith("01-fact-the-staging-db-moved-to-pg-delta"), listed
    hit = (mounted.path / "recall" / "where is the staging db" / listed[0]).read_text()
    assert f"agent: {AGENT}\n" in hit and "pg-delta" in hit


def _slow_writer(path: Path, first: str, rest: str) -> subprocess.Popen[str]:
    """A Python writer that writes `first`, says so, waits for a line on stdin, then writes `rest` and
    closes (or is killed before it does)."""
    return subprocess.Popen([sys.executable, "-c", "import sys\n"
                             "f = open(sys.argv[1], 'w'); f.write(sys.argv[2]); f.flush()\n"
                             "print('written', flush=True); sys.stdin.readline()\n"
                             "f.write(sys.argv[3]); f.close()", str(path), first, rest],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _finish(writer: subprocess.Popen[str]) -> int:
    assert writer.stdin is not None and writer.stdout is not None
    writer.stdin.write("go\n")
    writer.stdin.close()
    code = writer.wait(60)
    writer.stdout.close()
    return code


def test_a_reader_of_a_file_being_written_stores_nothing(mounted: Mount) -> None:
    """`cat`, `grep -r` over the mount, or any reader that opens an inbox file another process is still
    writing, used to store the half it read at its own close, and the writer's close then stored a second,
    whole memory (found 2026-12-04). A reader's close stores nothing; grep does not fail on a front matter
    the writer has not closed yet."""
    before = counts(mounted)
    path = mounted.path / "inbox" / "peek.md"
    writer = _slow_writer(path, "---\nkind: note\n", "---\nThe peek-kestrel note is whole only now.\n")
    assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
    for reader in ("cat inbox/peek.md > /dev/null", "grep -r kestrel inbox/ || true", "head -c 3 inbox/peek.md"):
        proc = sh(reader, mounted.path)
        assert proc.returncode == 0 and not proc.stderr, (reader, proc.stderr)
    assert counts(mounted) == before and "peek.md" in os.listdir(mounted.path / "inbox")
    assert _finish(writer) == 0
    found = facts_named(mounted, "peek-kestrel")
    assert len(found) == 1, found
    assert "peek.md" not in os.listdir(mounted.path / "inbox" / ".rejected")


def test_a_writer_killed_after_a_reader_opened_its_file_stores_nothing(mounted: Mount) -> None:
    """The killed-writer test looked at the last process to open the file: a reader's open in between made
    a writer's kill -9 store its half."""
    before = counts(mounted)
    path = mounted.path / "inbox" / "halfread.md"
    writer = _slow_writer(path, "The halfread-osprey note, first half. ", "Second half.\n")
    assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
    assert sh("cat inbox/halfread.md > /dev/null", mounted.path).returncode == 0
    writer.send_signal(signal.SIGKILL)
    writer.wait(30)
    assert writer.stdin is not None and writer.stdout is not None
    writer.stdin.close()
    writer.stdout.close()
    note = mounted.path / "inbox" / ".rejected" / "halfread.md"
    assert wait_until(note.exists)
    assert "killed by signal 9" in note.read_text()
    assert counts(mounted) == before and not facts_named(mounted, "halfread-osprey")


def test_a_command_killed_by_timeout_stores_nothing(mounted: Mount) -> None:
    """`timeout` opens the file (the shell's redirection, in the process that becomes timeout) and its child
    writes: the child killed, timeout exiting 124 normally, used to store the child's half."""
    before = counts(mounted)
    proc = sh("timeout 2 sh -c 'echo The timeout-heron part one; sleep 30; echo part two' > inbox/to.md",
              mounted.path)
    assert proc.returncode == 124, proc.stderr
    note = mounted.path / "inbox" / ".rejected" / "to.md"
    assert wait_until(note.exists)
    assert "killed by signal 15" in note.read_text()
    assert counts(mounted) == before and not facts_named(mounted, "timeout-heron")


def test_an_append_beside_a_writer_still_writing_is_stored_once_whole(mounted: Mount, tmp_path: Path) -> None:
    """`echo ... >> name` while another process writes that name shares its draft, as with a file: the
    draft is stored once, at the last writer's close, holding what a file on disk would hold after the same
    writes, not half at the append's close and again at the writer's."""
    bodies = []
    for where in (tmp_path, mounted.path / "inbox"):
        writer = _slow_writer(where / "shared.md", "The shared-plover note begins. ", "It ends here, after all.\n")
        assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
        proc = sh(f"echo 'An appended line.' >> {where}/shared.md", mounted.path)
        assert proc.returncode == 0, proc.stderr
        assert not facts_named(mounted, "shared-plover")
        assert _finish(writer) == 0
        bodies.append((tmp_path / "shared.md").read_text().strip())
    found = facts_named(mounted, "shared-plover")
    assert len(found) == 1, found
    assert (mounted.path / "facts" / found[0]).read_text().rstrip().endswith(bodies[0])


@pytest.mark.parametrize("how", ["lines", "cp"])
def test_a_file_past_the_limit_stores_nothing_even_when_its_lines_fit(mounted: Mount, tmp_path: Path, how) -> None:
    """Writes past 1 MiB fail with EFBIG; when they ended on a line boundary, the close used to store the
    first MiB of a JSONL file (7,606 of 9,500 records). Now the close refuses the whole file with EFBIG."""
    before = counts(mounted)
    src = tmp_path / "big.jsonl"
    with src.open("w") as fh:
        for i in range(9500):  # ~1.3 MB
            fh.write(json.dumps({"type": "fact", "source_id": f"lw-{how}-{i:05d}",
                                 "content": f"Linewise {how} {i} " * 4, "created_at": "2026-11-02"}) + "\n")
    script = (f"while IFS= read -r l; do printf '%s\\n' \"$l\"; done < {src} > inbox/{how}.jsonl" if how == "lines"
              else f"cp {src} inbox/{how}.jsonl")
    proc = sh(script, mounted.path)
    assert "File too large" in proc.stderr, proc.stderr
    note = mounted.path / "inbox" / ".rejected" / f"{how}.jsonl.md"
    assert wait_until(note.exists)
    assert "larger than inbox/ takes" in note.read_text()
    assert counts(mounted) == before


def test_a_file_of_nuls_is_refused(mounted: Mount) -> None:
    """`truncate -s 100 inbox/tr.md` stored a fact of 100 NUL bytes (found 2026-12-04), which grep and rg then
    skip as binary. A NUL is not text: refused, with its place."""
    before = counts(mounted)
    proc = sh("truncate -s 100 inbox/tr.md", mounted.path)
    assert proc.returncode != 0 and "Invalid argument" in proc.stderr, proc.stderr
    assert "NUL character at character 0" in (mounted.path / "inbox" / ".rejected" / "tr.md").read_text()
    assert counts(mounted) == before


def test_a_draft_removed_while_its_writer_writes_is_not_stored(mounted: Mount) -> None:
    """`rm inbox/x.md` while a writer still has it open: as with an unlinked file, the writer's close succeeds
    and nothing is kept. Before (found 2026-12-04), the writer's close stored it anyway."""
    before = counts(mounted)
    writer = _slow_writer(mounted.path / "inbox" / "gone.md", "The gone-grebe note, ", "never wanted.\n")
    assert writer.stdout is not None and writer.stdout.readline().strip() == "written"
    assert sh("rm inbox/gone.md", mounted.path).returncode == 0
    assert "gone.md" not in os.listdir(mounted.path / "inbox")
    assert _finish(writer) == 0
    assert counts(mounted) == before and not facts_named(mounted, "gone-grebe")
    assert "gone.md" not in os.listdir(mounted.path / "inbox" / ".rejected")


def test_the_same_note_written_twice_is_one_memory(mounted: Mount) -> None:
    """An agent that writes a note again (a retry after an error it could not read) used to get two facts:
    the time of the write was part of the note's id. Then the second write was that memory's next version,
    equal but for its time, so a retry after ENOTCONN (stored, or not: unknown) left a second version
    (found 2026-12-07). Now a write equal to its memory's head but for the time the inbox gave it stores
    nothing; a changed copy of the memory's file is still its next version."""
    for _ in range(2):
        assert sh("echo 'The twice-written wren note' > inbox/wren.md", mounted.path).returncode == 0
        time.sleep(1.1)
    found = facts_named(mounted, "twice-written-wren")
    assert len(found) == 1, found
    memory_id = next(line.split(": ", 1)[1] for line in (mounted.path / "facts" / found[0]).read_text().splitlines()
                     if line.startswith("id: "))
    assert os.listdir(mounted.path / "history" / memory_id) == ["v1.md"]
    own = mounted.path / "facts" / found[0]
    edited = own.read_text().replace("wren note", "wren note, edited")
    assert sh(f"printf '%s' {shlex.quote(edited)} > inbox/wren-edit.md", mounted.path).returncode == 0
    assert sorted(os.listdir(mounted.path / "history" / memory_id)) == ["v1.md", "v2.md"]


@pytest.mark.parametrize(("name", "script", "words", "expected"), [
    ("build", "sh -c 'echo \"Build notes for the yak-release:\"; uname -s; date +%Y; echo all green'",
     "build-notes-for-the-yak-release", ["Linux", "all green"]),
    ("group", "{ echo 'The okapi-group head'; /bin/true; echo 'and its tail'; }", "okapi-group-head", ["its tail"]),
    ("subshell", "( echo 'The subshell-ibis one'; sleep 1; echo two )", "subshell-ibis-one", ["two"]),
    ("front", "{ echo ---; echo 'kind: decision'; /bin/true; echo ---; echo 'We deploy on Thursdays, narwhal'; }",
     "we-deploy-on-thursdays-narwhal", ["kind: decision"]),
])
def test_commands_a_writer_runs_do_not_store_its_file_early(mounted: Mount, name, script, words, expected) -> None:
    """A shell writing into inbox/ runs commands that inherit the file (`uname`, `git log`, `sleep`): each
    one's exit closes the same open file. Those closes stored the part written so far (three facts for
    one file; a front matter still open left a false refusal), found 2026-12-04. Only the writer's own
    close stores it."""
    proc = sh(f"{script} > inbox/{name}.md", mounted.path)
    assert proc.returncode == 0, proc.stderr
    found = facts_named(mounted, words)
    assert len(found) == 1, found
    text = (mounted.path / "facts" / found[0]).read_text()
    assert all(e in text for e in expected), text
    assert f"{name}.md" not in os.listdir(mounted.path / "inbox" / ".rejected")


def test_a_writer_that_hands_its_file_to_a_command_and_closes_its_copy_stores_what_the_command_wrote(
        mounted: Mount) -> None:
    """`Popen(cmd, stdout=f); f.close(); p.wait()`: the command's exit is the last close, though the
    writer did not make it. It stores the file (were every close but the opener's ignored, it would store
    nothing)."""
    script = ("import subprocess, sys\n"
              "f = open(sys.argv[1], 'w')\n"
              "p = subprocess.Popen(['sh', '-c', 'echo The handed-lynx note starts; sleep 1; echo and ends'], "
              "stdout=f)\n"
              "f.close(); sys.exit(p.wait())")
    run_python(script, mounted.path / "inbox" / "handed.md")
    assert wait_until(lambda: bool(facts_named(mounted, "handed-lynx")))
    found = facts_named(mounted, "handed-lynx")
    assert len(found) == 1, found
    assert "and ends" in (mounted.path / "facts" / found[0]).read_text()


def test_a_descriptor_held_open_across_writes_is_one_memory(mounted: Mount) -> None:
    """Found 2026-12-05: `exec 5> f; echo a >&5; echo b >&5; exec 5>&-` stored two memories, "a" and
    "a b": bash closes a copy of 5 after each echo, and that close was taken as the writer's last."""
    before = counts(mounted)
    proc = sh("exec 5> inbox/held.md; echo 'The held-osprey nests by the weir' >&5; "
              "echo 'and fishes at dawn' >&5; exec 5>&-", mounted.path)
    assert proc.returncode == 0, proc.stderr
    found = facts_named(mounted, "held-osprey")
    assert len(found) == 1, found
    assert "and fishes at dawn" in (mounted.path / "facts" / found[0]).read_text()
    after = counts(mounted)
    assert sum(c["facts"] for c in after.values()) == sum(c["facts"] for c in before.values()) + 1, (before, after)


def test_a_killed_child_left_unreaped_does_not_refuse_its_parents_file(mounted: Mount) -> None:
    """Found 2026-12-05: a writer whose earlier child was killed and not yet reaped (a zombie keeps its
    exit signal in /proc) had every close refused as "killed by signal 9" (ECANCELED)."""
    script = ("import subprocess, sys, time\n"
              "child = subprocess.Popen(['sleep', '60']); child.kill(); time.sleep(0.3)\n"
              "assert open(f'/proc/{child.pid}/stat').read().rsplit(')', 1)[1].split()[0] == 'Z'\n"
              "with open(sys.argv[1], 'w') as fh: fh.write('The zombie-kestrel hunts over the dunes')\n"
              "child.wait()\n")
    run_python(script, mounted.path / "inbox" / "zombie.md")
    assert len(facts_named(mounted, "zombie-kestrel")) == 1


def _syscall(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/syscall").read_text().strip()
    except OSError as exc:
        return f"unreadable ({exc.strerror})"


def _blocked_in_close(pid: int) -> bool:
    return _syscall(pid).split(" ")[0] == "3"  # close(2) on x86_64


def test_a_daemon_killed_during_a_close_answers_enotconn(tmp_path: Path) -> None:
    """Found 2026-12-05: kill -9 of the daemon while a close waited on its ingest gave the writer
    ECONNABORTED, which the README's errno table does not list: the inbox process, told to stop by the
    daemon's death, left the FUSE connection without answering the close. It answers first (ENOTCONN:
    whether the file was stored is unknown), then unmounts."""
    # writing 15,000 records keeps the ingest busy (since 2026-12-07 a write through the mount embeds only
    # its first 512 rows before it returns, so embedding alone no longer does)
    env = base_env(tmp_path, RECALLFS_SEMANTIC="true", RECALLFS_INBOX_MAX_BYTES=str(4 << 20))
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    try:
        daemon = int(json.loads(mount.cli("status", "--json").stdout)["mounts"][0]["pid"])
        src = tmp_path / "many.jsonl"
        src.write_text("".join(json.dumps({"type": "fact", "source_id": f"k{i}", "created_at": "2026-01-01",
                                           "content": f"Kill test fact {i} about the heron ledger"}) + "\n"
                               for i in range(15000)))
        cp = subprocess.Popen(["cp", str(src), str(mount.path / "inbox" / "many.jsonl")], stderr=subprocess.PIPE,
                              text=True)
        # a loaded machine can take long to copy 2 MB through FUSE; a cp that ended first says how
        wait_until(lambda: _blocked_in_close(cp.pid) or cp.poll() is not None, timeout=180)
        if not _blocked_in_close(cp.pid):
            ended = cp.poll()
            err = cp.communicate(timeout=60)[1] if ended is not None else ""
            note = mount.path / "inbox" / ".rejected" / "many.jsonl.md"
            why = note.read_text() if note.exists() else ""
            raise AssertionError(f"cp not seen in close: returncode {ended}, {err!r}, {why!r}")
        time.sleep(2)  # the daemon has the file (a wait, not a timed assertion)
        os.kill(daemon, signal.SIGKILL)
        _, err = cp.communicate(timeout=60)
        assert cp.returncode != 0 and "Transport endpoint is not connected" in err, err
    finally:
        stop_mount(mount)


def facts_stored(mount: Mount) -> int:
    return int(json.loads(mount.cli("status", "--json").stdout)["workspaces"]["acme/proj"]["facts"])


def test_a_file_under_a_raised_inbox_limit_is_stored(tmp_path: Path) -> None:
    """Found 2026-12-07: the daemon read at most 2 MiB of a request, and an inbox file travels to it
    base64-encoded, so with RECALLFS_INBOX_MAX_BYTES raised past ~1.5 MiB a file within the limit was cut
    off and its writer told ENOTCONN, "whether the file was stored is unknown" (it never was)."""
    env = base_env(tmp_path, RECALLFS_INBOX_MAX_BYTES=str(4 << 20))
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    try:
        src = tmp_path / "big.jsonl"
        src.write_text("".join(json.dumps({"type": "fact", "source_id": f"b{i}", "created_at": "2026-01-01",
                                           "content": f"Big inbox fact {i} about the gannet ledger " + "x" * 60})
                               + "\n" for i in range(15000)))
        assert src.stat().st_size > 1_600_000
        before = facts_stored(mount)
        proc = subprocess.run(["cp", str(src), str(mount.path / "inbox" / "big.jsonl")], capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert facts_stored(mount) == before + 15000
    finally:
        stop_mount(mount)


def test_a_stopped_daemon_refuses_a_close_with_enotconn_not_einval(tmp_path: Path) -> None:
    """A daemon stopped (SIGSTOP, a debugger) is sent nothing: the close said EINVAL, the answer for a file
    to fix, though nothing is wrong with the file."""
    env = base_env(tmp_path)
    build_store(tmp_path, SAMPLE, env)
    mount = start_mount(tmp_path, env)
    daemon = int(json.loads(mount.cli("status", "--json").stdout)["mounts"][0]["pid"])
    inbox = os.open(mount.path / "inbox", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.kill(daemon, signal.SIGSTOP)
        # from inside inbox/, entered before: a path through the mount's root would wait on the stopped daemon
        src = tmp_path / "late.md"
        src.write_text("The stopped-daemon note\n")
        proc = subprocess.run(["cp", str(src), "late.md"], capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: os.fchdir(inbox), pass_fds=(inbox,))
        assert proc.returncode != 0 and "Transport endpoint is not connected" in proc.stderr, proc.stderr
    finally:
        os.close(inbox)
        os.kill(daemon, signal.SIGCONT)
        stop_mount(mount)
