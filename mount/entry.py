"""The `recallfs` console script's entry. It imports nothing until it runs, so that Ctrl-C while the CLI's
modules are still importing (a second or more on a loaded machine) ends the command as Ctrl-C anywhere
later does, with 130 and no traceback (found by CI under load: a SIGINT 0.3 s after start landed in an
import, before cli.main could catch anything)."""

from __future__ import annotations

from recallfs.mount.cli_errors import EXIT_INTERRUPTED


def main() -> int:
    try:
        from recallfs.mount.cli import main as run
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return run()
