"""`recallfs ingest -` and `... | recallfs ingest /dev/stdin`: standard input becomes a private temporary file
for the length of the command. An ingest through a mount hands the daemon a path to read, and a path to
this process's descriptor (/dev/stdin, /proc/self/fd/0) would name the daemon's own input there."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _is_stream(path: Path) -> bool:
    """`-`, or a path that names this process's own descriptor (/dev/stdin, /dev/fd/N, bash's <(...)),
    which means something else in the daemon. A named FIFO is a path the daemon can open itself."""
    text = str(path)
    if text == "-" or text == "/dev/stdin" or text.startswith(("/dev/fd/", "/proc/self/")):
        return True
    return os.path.realpath(text).startswith("/proc/")  # /dev/stdin by another link, /proc/<pid>/fd/N


@contextmanager
def staged_input(path: Path) -> Iterator[Path]:
    """`path` itself when it is a file; else its bytes in a private temporary file, removed afterwards."""
    if not _is_stream(path):
        yield path
        return
    directory = Path(tempfile.mkdtemp(prefix="recallfs-"))  # 0700; messages name its file stdin.jsonl
    staged = directory / "stdin.jsonl"
    try:
        with open(staged, "wb") as out:
            if str(path) == "-":
                shutil.copyfileobj(sys.stdin.buffer, out)
            else:
                with open(path, "rb") as src:
                    shutil.copyfileobj(src, out)
        yield staged
    finally:
        shutil.rmtree(directory, ignore_errors=True)
