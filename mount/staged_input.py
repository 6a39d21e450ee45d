"""`recallfs ingest -` and `... | recallfs ingest /dev/stdin`: a pipe becomes a private temporary file for the
length of the command. An ingest through a mount hands the daemon a path to read, and a pipe's path
(/dev/stdin, /proc/self/fd/0) would name the daemon's own input there; an importer also reads its file
more than once (its size, then its lines)."""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _is_stream(path: Path) -> bool:
    if str(path) == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:  # missing: the importer says so
        return False


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
