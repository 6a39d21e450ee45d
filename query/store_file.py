"""Whether the store's path still names the file a process opened.

A daemon holds its store open for as long as it serves. A cleaner or an `rm` that deletes the file (or a
copy put in its place) leaves the daemon serving a file nobody else can reach: what it commits then is
lost when it stops, and a WAL it writes beside the path would be replayed into whatever file comes to
stand there. So a store remembers the identity (device, inode) of the file it opened; its writes are
refused once the path names another file or none, and the mount's health says so.
"""

from __future__ import annotations

import os
from pathlib import Path


class FileIdentity:
    def __init__(self, path: Path) -> None:
        self.path = Path(os.path.abspath(path))  # a later chdir must not make it name another file
        st = os.stat(self.path)
        self.opened = (st.st_dev, st.st_ino)

    def problem(self) -> str | None:
        """None while the path names the opened file; else what became of it."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return (f"the store file {self.path} was deleted while it was open: writes are refused, and what "
                    "this process holds is lost when it stops; restore the file from a backup and start again")
        except OSError as exc:
            return f"the store file {self.path} cannot be checked ({exc.strerror or exc})"
        if (st.st_dev, st.st_ino) != self.opened:
            return (f"the store file {self.path} was replaced by another file while it was open: writes are "
                    "refused; unmount and mount again to serve the file now there")
        return None
