"""`recallfs`: one console script, one subcommand per job.

The commands live in modules by concern (mount/cmd_store.py, cmd_recall.py, cmd_mount.py); other
packages add theirs through the `recallfs.commands` entry-point group (evals contributes `eval`), so
the CLI imports nothing above its layer. Errors become messages and exit codes in one place
(mount/cli_errors.py, which lists the codes).

Errors come fast: each command checks its settings, arguments and store before it starts loading the
embedding model, and a process that ends while the model is still loading does not wait for it.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib import metadata
from typing import Any

from recallfs.mount import cmd_lake, cmd_mount, cmd_recall, cmd_store
from recallfs.mount.cli_errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, describe, say
from recallfs.mount.cli_interrupts import Interrupts
from recallfs.mount.cli_output import OutputError, discard_stdout, guard_streams

BUILTIN: tuple[Callable[[Any], None], ...] = (cmd_store.register, cmd_recall.register, cmd_mount.register,
                                              cmd_lake.register)
ENTRY_POINTS = "recallfs.commands"


def _plugins() -> Iterable[Callable[[Any], None]]:
    """Registrations other packages declare (pyproject: [project.entry-points."recallfs.commands"])."""
    for entry in sorted(metadata.entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        yield entry.load()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recallfs",
        description="Agent memory you can ls, cat and grep: a DuckDB memory store with hybrid recall, "
        "mounted as a FUSE filesystem.",
        epilog="Every option can also be set as RECALLFS_<NAME>; see the README's configuration table.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in (*BUILTIN, *_plugins()):
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    guard_streams()
    try:
        code = _run(argv)
    except SystemExit as exc:  # argparse: --help (0), bad usage (2)
        code = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError:
        code = EXIT_ERROR
    except KeyboardInterrupt:  # before the command ran (parsing, set-up): as Ctrl-C during it
        code = EXIT_INTERRUPTED
    except OutputError as exc:  # raised while argparse wrote --help or its usage
        say(_RUNNING[0], str(exc))
        code = EXIT_ERROR
    if not _flush_stdout():
        code = EXIT_ERROR
    _leave_if_model_loading(code)
    if code == 0:
        code = _keep_query_graph()
    return code


def _keep_query_graph() -> int:
    """A command that loaded the model saves its query graph as it ends, where none is saved yet (once
    per model: ~2 s, after its output), so that later recalls need no model (query/query_graph.py)."""
    embedder = sys.modules.get("recallfs.query.shared_embedders")
    try:
        if embedder is not None:
            embedder.keep_query_graphs()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0


# argparse reads `--since -7d` as a flag with no value: a duration after these is joined to its flag
_WHEN_FLAGS = frozenset({"--since", "--until", "--now", "--recent"})  # --recent: to say why -7d is no half-life
_AGO = re.compile(r"^-[0-9]+[ \t]*[hdwmy]$", re.I)  # as query_syntax._DURATION: ASCII digits and spaces


def joined_durations(argv: Sequence[str]) -> list[str]:
    """`--since -7d` as `--since=-7d`, so that a duration written with a minus is a value."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in _WHEN_FLAGS and _AGO.match(arg) and "--" not in out:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]
    return parser


_RUNNING = [""]  # the command being run, for a message that comes after it returned (stdout's last flush)


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(joined_durations(sys.argv[1:] if argv is None else argv))
    if extra:  # argparse would print the top-level usage; the command's own says what it takes
        _subparser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    _RUNNING[0] = args.command
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if sys.stdout is None and args.command != "mount":  # `recallfs status >&-`: say so before doing anything
        say(args.command, "standard output is closed; send it somewhere (> FILE, or > /dev/null)")
        return EXIT_ERROR
    interrupts = Interrupts() if args.command != "mount" else None  # the daemon keeps trio's own handling
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        if interrupts is not None and interrupts.seen:  # DuckDB turns Ctrl-C into its own error
            return EXIT_INTERRUPTED
        message = describe(exc)
        if message is None:
            raise  # not an error the user can act on: a bug, with its traceback
        say(args.command, message)
        return EXIT_ERROR


def _flush_stdout() -> bool:
    """Flush now, so that a reader that went away (`recallfs status | head -1`) ends the command
    quietly with exit 1, as SIGPIPE stops other tools, instead of a traceback or noise at exit."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        return True
    except BrokenPipeError:
        pass
    except OutputError as exc:  # a full disk under `recallfs status > FILE`: one line, exit 1
        say(_RUNNING[0], str(exc))
    discard_stdout()  # Python flushes stdout once more at exit; give that flush somewhere harmless to go
    return False


def _leave_if_model_loading(code: int) -> None:
    """A model still loading holds the interpreter's exit while torch finishes importing on its
    thread (up to a second or more). Nothing will use it now: leave at once. Stores are closed by
    then (every command opens them in `with`), and the only threads are daemon threads."""
    embedder = sys.modules.get("recallfs.query.shared_embedders")
    if embedder is None or not embedder.any_loading():
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except OSError:
            pass
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
