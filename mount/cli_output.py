"""The CLI's standard streams: stdout whose failed writes are one user-facing error, and stderr that may
be closed (`2>&-`: Python then sets sys.stderr to None, and print(file=None) would write to stdout)."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from recallfs.mount.cli_errors import CliError


class OutputError(CliError):
    """stdout could not take the output (a full disk, an I/O error): one line, exit 1."""


def _output_error(exc: OSError) -> OutputError:
    reason = exc.strerror or str(exc)
    return OutputError(f"cannot write the output: {reason} (errno {exc.errno}); nothing else is wrong")


class CheckedOutput:
    """sys.stdout, with a write or flush that fails for any reason but a reader that went away raised as
    OutputError (a reader that went away stays BrokenPipeError: cli.main ends quietly then, as SIGPIPE
    would). Everything else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _output_error(exc) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _output_error(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> None:
    """At the CLI's start: wrap sys.stdout once, and give a closed stderr (`2>&-`, sys.stderr None)
    somewhere harmless to go: argparse prints its usage to stdout when sys.stderr is None, and
    print(file=None) writes to stdout, either of them into the command's output."""
    if sys.stdout is not None and not isinstance(sys.stdout, CheckedOutput):
        sys.stdout = CheckedOutput(sys.stdout)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # for the life of the process


def discard_stdout() -> None:
    """Point stdout's descriptor at /dev/null: Python flushes stdout once more at exit, and that flush must
    not fail again (an "Exception ignored" after the one line the user was told)."""
    if sys.stdout is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def stderr_is_tty() -> bool:
    """Whether progress bars may draw: stderr open and a terminal."""
    return sys.stderr is not None and sys.stderr.isatty()


def note(text: str) -> None:
    """A line for the user beside the output (stderr), dropped when stderr is closed."""
    if sys.stderr is not None:
        print(text, file=sys.stderr)
