"""The one place where the CLI turns errors into what the user reads, and into exit codes.

Commands raise their layers' own errors (a store that cannot open, an ingest line refused, a daemon that
will not answer); `describe` maps each to its one-line message. Anything not in the table is a bug and
keeps its traceback.

Exit codes:
- 0: success;
- 1: an error the message explains (bad input, a missing store, a refused ingest, ...), or output that
  could not be written (a reader that went away, as in `recallfs status | head -1`: no message, as a tool
  stopped by SIGPIPE);
- 2: bad usage (argparse's message);
- 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class CliError(Exception):
    """An error the CLI itself finds (a bad flag, a missing store): printed as is, exit 1."""


# (module, class, prefix): an exception of that class (or a subclass) prints as prefix + its message.
# Classes are found through sys.modules, never imported here: an exception of a class means its module is
# loaded, and `recallfs --help` must not import DuckDB or numpy.
MESSAGES: tuple[tuple[str, str, str], ...] = (
    ("recallfs.mount.cli_errors", "CliError", ""),  # and its subclasses (cli_output.OutputError)
    ("recallfs.query.ingest", "IngestError", "ingest refused, nothing written: "),
    ("recallfs.query.ingest_file", "IndexRefreshError", ""),
    ("recallfs.query.settings", "SettingsError", ""),
    ("recallfs.query.store", "StoreError", ""),
    ("recallfs.query.vectors", "VectorError", ""),
    ("recallfs.scope.principal", "ScopeError", ""),
    ("recallfs.mount.control_auth", "ControlError", ""),
    ("recallfs.mount.registry", "RuntimeDirError", ""),
    ("recallfs.mount.mount_config", "MountError", ""),
)


def describe(exc: BaseException) -> str | None:
    """The one-line message for an error the user can act on; None for anything else (a bug)."""
    for module, name, prefix in MESSAGES:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(exc, cls):
            return prefix + str(exc)
    return None


def say(command: str, message: str) -> None:
    if sys.stderr is None:  # `2>&-`: print(file=None) would write to stdout, into the command's output
        return
    try:
        print(f"recallfs {command}: {message}" if command else f"recallfs: {message}", file=sys.stderr)
    except (OSError, AttributeError):  # stderr closed or gone too: the exit code speaks alone
        pass
