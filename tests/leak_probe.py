"""Reads a mounted tree the way a curious agent would, and reports everything it saw.

Standard library only: the leak tests run it with the system python3 as other users
(`runuser -u USER -- python3 leak_probe.py < request.json`), who cannot reach the project's venv.

Request: {"root": MOUNT, "guesses": [relative paths], "queries": [recall directory names]}.
Reply: {"reads": N, "walk": {path: size or errno}, "texts": [everything read or printed],
        "guesses": {path: [errno per operation]}}.
"""

from __future__ import annotations

import errno
import json
import os
import sys


def _err(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, str(exc.errno))


class Probe:
    def __init__(self, root: str) -> None:
        self.root = root
        self.reads = 0
        self.texts: list[str] = []
        self.walk: dict[str, object] = {}

    def _read(self, path: str) -> bytes | str:
        self.reads += 1
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except OSError as exc:
            self.texts.append(str(exc))
            return _err(exc)

    def _stat(self, path: str, follow: bool = False) -> os.stat_result | str:
        self.reads += 1
        try:
            return os.stat(path) if follow else os.lstat(path)
        except OSError as exc:
            self.texts.append(str(exc))
            return _err(exc)

    def _list(self, path: str) -> list[str] | str:
        self.reads += 1
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            self.texts.append(str(exc))
            return _err(exc)
        self.texts.extend(names)
        return names

    def tree(self, rel: str = "") -> None:
        """Every name and every file below `rel` (symlinks reported, not followed)."""
        path = os.path.join(self.root, rel)
        names = self._list(path)
        if isinstance(names, str):
            self.walk[rel or "."] = names
            return
        for name in names:
            child = os.path.join(rel, name)
            st = self._stat(os.path.join(self.root, child))
            if isinstance(st, str):
                self.walk[child] = st
            elif os.path.islink(os.path.join(self.root, child)):
                self.walk[child] = "link"
            elif os.path.isdir(os.path.join(self.root, child)):
                self.walk[child] = "dir"
                self.tree(child)
            else:
                data = self._read(os.path.join(self.root, child))
                if isinstance(data, bytes):
                    self.texts.append(data.decode("utf-8", "replace"))
                    self.walk[child] = st.st_size if len(data) == st.st_size else f"size {st.st_size} != {len(data)}"
                else:
                    self.walk[child] = data

    def guess(self, rel: str) -> list[str]:
        """A name the caller should not be able to see: every way of touching it."""
        path = os.path.join(self.root, rel)
        out = []
        for op in (lambda: self._stat(path), lambda: self._stat(path, follow=True), lambda: self._list(path),
                   lambda: self._read(path)):
            result = op()
            out.append(result if isinstance(result, str) else "ok")
        return out


def main() -> None:
    req = json.load(sys.stdin)
    probe = Probe(req["root"])
    probe.tree()
    guesses = {rel: probe.guess(rel) for rel in req.get("guesses", [])}
    for query in req.get("queries", []):
        probe.tree(os.path.join("recall", query))
    json.dump({"reads": probe.reads, "walk": probe.walk, "texts": probe.texts, "guesses": guesses}, sys.stdout)


if __name__ == "__main__":
    main()
