"""Ctrl-C in a CLI command. Python raises KeyboardInterrupt, but a DuckDB statement running at that moment
turns it into its own error ("Query interrupted", raised as RuntimeError), which would otherwise read as
a bug (a traceback, exit 1). Recording that SIGINT arrived lets cli._run answer 130 either way."""

from __future__ import annotations

import signal
from types import FrameType


class Interrupts:
    """Counts SIGINT from creation on, then raises KeyboardInterrupt as Python's own handler does. Installed
    only over Python's default handler: a shell that started the command with SIGINT ignored keeps that."""

    def __init__(self) -> None:
        self.seen = False
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._on_sigint)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.seen = True
        raise KeyboardInterrupt
