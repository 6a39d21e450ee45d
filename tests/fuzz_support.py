"""What the fuzz suites feed a real mount, and what they hold it to.

- Strategies: recall names (any bytes, any unicode, 200-300 bytes, inline options with hostile values,
  FTS operators, SQL-looking text, '..', backslashes), paths outside recall/, and operations on them.
- `Probe`: runs one operation through the kernel and checks the invariants: no EIO, every errno one the
  README's errno table documents, `fstat` size equal to the bytes read, the daemon still alive.

Examples per test: RECALLFS_FUZZ_EXAMPLES, or `pytest --long` (over 100,000 in all); the CI run keeps
about 2,000 in all. Hypothesis runs derandomized, so a CI run is repeatable.
"""

from __future__ import annotations

import errno
import os
import re
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from conftest import REPO

OPTIONS = ("kind", "tag", "session", "agent", "since", "until", "k", "offset", "recent", "budget")
HOSTILE_VALUES = (
    "", "-1", "0", "1", "99999y", "99999999999999999999d", "1e309", "nan", "inf", "-inf", "9999-12-31",
    "0001-01-01", "2026-13-45", "2026-02-30T25:61", "7d7d", "∞", "..", "\\", "'", '"', "%2F", "∕", "*", "ℵ",
    "off", "on", "0h", "1000000000000", "-99999y", "k:5", "\ufffd", "\x7f", "tag:tag:", "a,b,,c", ",",
)
OPERATORS = (
    "AND", "OR", "NOT", "NEAR", "*", "^", "~", '"', "(", ")", "+", "-", "'; DROP TABLE facts; --",
    "1=1", "' OR '1'='1", "$1", "?", "%s", "..", "../..", "\\", "\\\\", "%2f", "%2F%2F", "∕", "NULL",
    "SELECT * FROM main.policies", "match_bm25", "ci", "maya", "nextest", "deploy", "staging", "🙂", "日本語",
)


def _encode(text: str) -> bytes:
    # surrogatepass: a lone surrogate becomes bytes that are not valid UTF-8, as a hostile name may be
    return text.encode("utf-8", "surrogatepass")


def _no_separator(name: bytes) -> bytes:
    # '/' separates path components and NUL ends a C string: neither can be in one name
    cleaned = name.replace(b"/", b"_").replace(b"\0", b"_")
    return cleaned or b"_"


_option = st.builds(lambda name, value: f"{name}:{value}", st.sampled_from(OPTIONS),
                    st.one_of(st.sampled_from(HOSTILE_VALUES), st.integers(-10**30, 10**30).map(str),
                              st.text(max_size=16)))
_word = st.one_of(st.sampled_from(OPERATORS), st.text(min_size=1, max_size=24),
                  st.text(alphabet=string.ascii_letters, min_size=1, max_size=12))
query_text = st.lists(st.one_of(_word, _option), min_size=1, max_size=14).map(" ".join)
recall_names = st.one_of(
    query_text.map(_encode),
    st.binary(min_size=1, max_size=300),
    st.text(min_size=60, max_size=110).map(_encode),  # 200-300 bytes once multi-byte characters count
    st.text(alphabet="ab∕🙂 é", min_size=100, max_size=150).map(_encode),
    st.sampled_from([b"..", b".", b"...", b"\\", b"..\\..", b".results", b".git", b"caf\xe9", b"\xff\xfe",
                     b"ci since:99999y", b"maya k:5", b"ci tag:windows", b"x" * 255, b"x" * 256]),
).map(_no_separator)

TOP = ("", "facts", "facts/by-kind", "facts/by-tag", "sessions", "entities", "history", "recall",
       "recall/.results", "index.md", "inbox", "inbox/.rejected")
OPERATIONS = ("stat", "lstat", "listdir", "read", "readlink", "open_write", "create", "mkdir", "rmdir",
              "unlink", "rename", "symlink", "link", "chmod", "chown", "truncate", "utime", "setxattr",
              "getxattr", "listxattr", "removexattr", "access_write")
WRITES = frozenset(OPERATIONS) - {"stat", "lstat", "listdir", "read", "readlink", "getxattr", "listxattr"}
component = st.one_of(
    st.sampled_from(["..", ".", "x", "index.md", "v1.md", "v999999999.md", "summary.md", "transcript.md",
                     "turns", "0000-maya.md", "by-kind", "by-tag", "decision", "ci", "ci.md", "f-ci",
                     "_truncated.md", ".git", ".results", "results.json", "context.xml", "01-fact-x.md"]
                    ).map(str.encode),
    st.binary(min_size=1, max_size=40).map(_no_separator),
    st.text(min_size=1, max_size=40).map(_encode).map(_no_separator),
)


def documented_errnos() -> dict[int, str]:
    """errno number -> name, from the README's errno table (the only errnos the mount may answer)."""
    text = (REPO / "README.md").read_text()
    table = text.split("<!-- errno-table -->", 1)[1].split("<!-- /errno-table -->", 1)[0]
    names = re.findall(r"^\| `(E[A-Z]+)` \|", table, re.M)
    assert names, "the README's errno table is missing"
    return {getattr(errno, n): n for n in names}


def read_fd(path: bytes) -> tuple[int, bytes]:
    """(size fstat announces, bytes read), both from one open file: one inode."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return size, b"".join(chunks)
    finally:
        os.close(fd)


def _write_ops(p: bytes) -> dict[str, Callable[[], Any]]:
    return {
        "open_write": lambda: os.close(os.open(p, os.O_WRONLY)),
        "create": lambda: os.close(os.open(p + b"-new", os.O_WRONLY | os.O_CREAT, 0o644)),
        "mkdir": lambda: os.mkdir(p + b"-dir"),
        "rmdir": lambda: os.rmdir(p),
        "unlink": lambda: os.unlink(p),
        "rename": lambda: os.rename(p, p + b"-moved"),
        "symlink": lambda: os.symlink(b"target", p + b"-link"),
        "link": lambda: os.link(p, p + b"-hard"),
        "chmod": lambda: os.chmod(p, 0o777),
        "chown": lambda: os.chown(p, 1, 1),
        "truncate": lambda: os.truncate(p, 0),
        "utime": lambda: os.utime(p, (0, 0)),
        "setxattr": lambda: os.setxattr(p, b"user.recallfs", b"1"),
        "removexattr": lambda: os.removexattr(p, b"user.recallfs"),
        "access_write": lambda: _expect_false(os.access(p, os.W_OK)),
    }


def _expect_false(value: bool) -> None:
    assert value is False, "a read-only mount reports a path as writable"


@dataclass
class Probe:
    """Runs operations on a real mount and holds them to the invariants. `pid`: the daemon's."""

    mount: Path
    pid: int
    allowed: dict[int, str] = field(default_factory=lambda: {
        n: name for n, name in documented_errnos().items() if n != errno.EIO})
    errnos: Counter[str] = field(default_factory=Counter)
    examples: int = 0
    files_read: int = 0

    def call(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except OSError as exc:
            name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
            assert exc.errno in self.allowed, f"{what}: errno {name} ({exc}) is not one the README documents"
            self.errnos[name] += 1
            return None

    def alive(self) -> None:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            raise AssertionError(f"the daemon (pid {self.pid}) died") from None

    def recall(self, name: bytes) -> None:
        self.examples += 1
        directory = os.fsencode(self.mount) + b"/recall/" + name
        names = self.call(f"listdir {directory!r}", lambda: os.listdir(directory))
        for entry in names or []:
            path = directory + b"/" + entry
            got = self.call(f"read {path!r}", lambda path=path: read_fd(path))
            if got is not None:
                self.files_read += 1
                assert got[0] == len(got[1]), f"{path!r}: stat says {got[0]} bytes, read gave {len(got[1])}"
        self.alive()

    def path_op(self, path: bytes, op: str) -> None:
        inside = os.path.normpath(path)
        root = os.fsencode(self.mount)
        if not inside.startswith(root + b"/"):
            return  # '..' led out of the mount, or to its root (which the kernel, not the mount, guards)
        if op in WRITES and path.rsplit(b"/", 1)[-1] in (b".", b".."):
            return  # the kernel refuses writes to '.' and '..' itself (EBUSY, ENOTEMPTY, EINVAL)
        self.examples += 1
        reads: dict[str, Callable[[], Any]] = {
            "stat": lambda: os.stat(path), "lstat": lambda: os.lstat(path), "listdir": lambda: os.listdir(path),
            "readlink": lambda: os.readlink(path), "getxattr": lambda: os.getxattr(path, b"user.recallfs"),
            "listxattr": lambda: os.listxattr(path),
        }
        if op == "read":
            got = self.call(f"read {path!r}", lambda: read_fd(path))
            if got is not None:
                self.files_read += 1
                assert got[0] == len(got[1]), f"{path!r}: stat says {got[0]} bytes, read gave {len(got[1])}"
        elif op in reads:
            self.call(f"{op} {path!r}", reads[op])
        elif inside == root + b"/inbox" or inside.startswith(root + b"/inbox/"):
            # the one writable directory (issue 17): a write may succeed there; its errnos are still held
            # to the README's table, and the daemon must live through it
            writes = _write_ops(path)
            writes["access_write"] = lambda: os.access(path, os.W_OK)
            self.call(f"{op} {path!r}", writes[op])
        else:
            before = self.call("lstat before a write", lambda: os.lstat(path))
            self.call(f"{op} {path!r}", _write_ops(path)[op])
            after = self.call("lstat after a write", lambda: os.lstat(path))
            if before is not None and after is not None:
                assert (before.st_size, before.st_mode) == (after.st_size, after.st_mode), f"{op} changed {path!r}"
        self.alive()


def fuzz_examples(default: int, long: int) -> int:
    """How many examples a fuzz test runs: RECALLFS_FUZZ_EXAMPLES if set, `long` under `pytest --long`
    (the long run's tests add up to more than 100,000), else `default` (the CI run: about 2,000 in all)."""
    if os.environ.get("RECALLFS_FUZZ_EXAMPLES"):
        return int(os.environ["RECALLFS_FUZZ_EXAMPLES"])
    return long if os.environ.get("RECALLFS_FUZZ_LONG") else default
