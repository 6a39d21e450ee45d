"""The README's shell examples are true: the demo store, mounted, prints what the README shows.

Every fenced block of README.md whose lines start with `$ ` is a session: its commands run in order in
one shell (so `cd` carries over), with `~/mnt/memory` being a real mount of the bundled demo store (the
semantic arm on, as `make demo` mounts it) and `recallfs` the console script. The lines under a command
are what it prints: they must appear in its output in order, where `...` stands for anything (other
lines, or the rest of a line) and the text between two `...` must be contiguous. The `recallfs recall`
lines of "Using it" run against the same store and must answer with hits.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from mount_helpers import Mount, needs_fuse, start_mount, stop_mount, wait_until

from recallfs.evals import datasets

from conftest import run_cli

pytestmark = [pytest.mark.mount, needs_fuse]

README = Path(__file__).resolve().parents[1] / "README.md"
MOUNT_WORDS = "~/mnt/memory"
ELIDED = "..."


def sessions(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each `$ ` block of the README as [(command, the lines it shows)]."""
    out = []
    for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        lines = block.splitlines()
        if not lines or not lines[0].startswith("$ "):
            continue
        steps: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        out.append(steps)
    return out


def shows(expected: list[str], actual: str) -> bool:
    """Whether `actual` holds the expected lines as the module docstring says (tokens, in order)."""
    tokens = actual.split()
    segments: list[list[str]] = [[]]
    for token in " ".join(expected).split():
        if token == ELIDED:
            segments.append([])
        else:
            segments[-1].append(token)
    at = 0
    for i, seg in enumerate(segments):
        if not seg:
            continue
        found = next((j for j in range(at, len(tokens) - len(seg) + 1) if tokens[j:j + len(seg)] == seg), None)
        if found is None or (i == 0 and found != 0):  # no leading "...": the output starts with it
            return False
        at = found + len(seg)
    return segments[-1] == [] or at == len(tokens)  # no trailing "...": the output ends with it


@pytest.mark.parametrize(("expected", "actual", "ok"), [
    (["a b", "c"], "a b\nc\n", True),
    (["a", "...", "c"], "a b\nc", True),
    (["a", "c"], "a b c", False),       # b is not elided
    (["b", "..."], "a b c", False),     # the output starts with a
    (["...", "b", "..."], "a b c", True),
    (["a", "..."], "", False),
    ([], "", True),
])
def test_shows(expected, actual, ok):
    assert shows(expected, actual) is ok


@pytest.fixture(scope="module")
def demo_mount(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("readme")
    env = {"RECALLFS_STORE": str(tmp / "store.duckdb"), "RECALLFS_WORKSPACE": "demo/tern",
           "RECALLFS_AGENT": "atlas", "XDG_RUNTIME_DIR": str(tmp / "run")}
    run_cli("ingest", str(datasets.DEMO_MEMORY), env=env, check=True, timeout=600)
    mount = start_mount(tmp, env, "memory")
    try:
        # the model loads in the background; the README shows the hybrid view, as `make demo` waits for it
        assert wait_until(lambda: "recall hybrid" in mount.cli("status").stdout, timeout=300)
        yield mount
    finally:
        stop_mount(mount)


def _run_session(mount: Mount, steps: list[tuple[str, list[str]]]) -> list[str]:
    """Run the commands in one bash, returning each one's output."""
    marker = "@@readme-step@@"
    script = []
    for command, _ in steps:
        script.append(f"echo {marker}")
        script.append(command.replace(MOUNT_WORDS, shlex.quote(str(mount.path))))
    env = {**os.environ, **mount.env, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["bash", "-e", "-c", "\n".join(script)], capture_output=True, text=True, env=env,
                          timeout=600, cwd=mount.path)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split(marker + "\n")[1:]


def test_every_shell_example_prints_what_the_readme_shows(demo_mount):
    blocks = sessions(README.read_text(encoding="utf-8"))
    assert blocks, "the README has no $ examples"
    for steps in blocks:
        outputs = _run_session(demo_mount, steps)
        assert len(outputs) == len(steps)
        for (command, expected), actual in zip(steps, outputs, strict=True):
            assert shows(expected, actual), f"$ {command}\nREADME shows:\n" + "\n".join(expected) + \
                f"\nit printed:\n{actual}"


def test_the_headline_query_puts_the_test_command_first(demo_mount):
    hits = sorted(p.name for p in (demo_mount.path / "recall" / "how do I run the tests").iterdir())
    assert hits[0].startswith("01-fact-test-command-")
    assert "id: f-test-command" in (demo_mount.path / "recall" / "how do I run the tests" / hits[0]).read_text()


def test_the_recall_examples_of_using_it_answer(demo_mount):
    text = README.read_text(encoding="utf-8")
    commands = re.findall(r"^(recallfs recall \"[^\"]+\"(?: --format \w+)?)", text, flags=re.M)
    assert len(commands) >= 3
    for command in commands:
        args = shlex.split(command)[1:]
        proc = demo_mount.cli(*args)
        assert "matched nothing" not in proc.stdout and "no memory matched" not in proc.stdout, command


@pytest.mark.parametrize(("query", "first"), [
    ("how often do we release", "f-release-cadence-biweekly"),  # a turn saying "monthly" was first
    ("what is the MSRV", "f-msrv"),                             # a turn asking to raise it was first
])
def test_the_current_fact_comes_before_stale_turns(demo_mount, query, first):
    directory = demo_mount.path / "recall" / query
    names = sorted(p.name for p in directory.iterdir() if p.name.endswith(".md"))
    assert names[0].startswith("01-fact-"), names
    assert f"id: {first}\n" in (directory / names[0]).read_text()
    if query == "how often do we release":
        marked = [n for n in names if "stale: superseded by f-release-cadence-biweekly" in (directory / n).read_text()]
        assert marked and all(n[3:].startswith("turn-") for n in marked)
