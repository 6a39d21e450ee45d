"""The memory versions of one catalog generation already rendered: each one's content (key and size)
and, for a fact, the file name its words give it.

One version is a file in several directories: a fact under facts/, facts/by-kind/<k>/, facts/by-tag/<t>/
and history/<id>/, a turn under sessions/<s>/turns/ and history/<id>/. A listing says each file's size,
which takes a render, and a cold walk rendered every version two to five times, loading its row from
the store each time (issue 13). The first listing that renders a version records it here; the others
list it from here without loading or rendering it. Its bytes went to the content cache with that first
listing, under the same content key (a read after an eviction renders them again, as before).

Kept in the catalog's `Readable`, which is one principal's view of one store generation, so one
principal's entries never serve another. A new generation starts empty but may take an earlier
generation's entry (`Readable.earlier`) for a version whose lineage has not changed: a version's row
never changes (a change is a new row), and its lineage (current, superseded_by, supersedes) is the rest
of what its file says, so the file is the same. At 100k memories one fact written made the next `ls
facts/` load and render all 30k current facts again (2.8 s). Worker threads; two may record one version
at once, with equal values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recallfs.mount import render
from recallfs.mount.entries import Content, ContentKey, Deps
from recallfs.mount.names import fact_name
from recallfs.query.catalog import Catalog
from recallfs.query.readable import CHECKED_MEMOS, Meta, Readable, Row

_MEMO = "mount:known-files"
CHECKED_MEMOS.add(_MEMO)


@dataclass(frozen=True, slots=True)
class Known:
    content: Content
    name: str  # a fact's file name ("" for other tables: their names come from the catalog's metadata)
    deps: Deps  # (("id", id),): shared by the version's entries in every directory that lists it


def content_key(table: str, rid: int, lineage: object) -> ContentKey:
    """The lineage is part of the key: a version's front matter changes when a newer one replaces it."""
    return ("row", table, rid, lineage)


def row_content(row: Row) -> tuple[Content, bytes]:
    data = render.render_memory(row)
    return Content(content_key(str(row["table"]), int(row["rid"]), row.get("lineage")), len(data)), data


class KnownFiles:
    def __init__(self, cat: Readable) -> None:
        self.cat = cat
        self._by_row: dict[tuple[str, int], Known] = cat.derived(_MEMO, dict)
        self._earlier: dict[tuple[str, int], Known] = cat.earlier.get(_MEMO, {})

    def get(self, meta: Meta) -> Known | None:
        return self._by_row.get((meta.table, meta.rid))

    def of_row(self, row: Row, out: dict[ContentKey, bytes]) -> Known:
        """A loaded row's file: rendered (its bytes into `out`) unless it was already."""
        key = (str(row["table"]), int(row["rid"]))
        known = self._by_row.get(key)
        if known is None and self._still_true_one(key, row.get("lineage")):
            known = self._by_row[key] = self._earlier[key]
        if known is None:
            content, data = row_content(row)
            out[content.key] = data
            name = fact_name(row["content"], row["id"]) if key[0] == "facts" else ""
            known = self._by_row[key] = Known(content, name, (("id", str(row["id"])),))
        return known

    def load(self, catalog: Catalog, metas: Sequence[Meta], out: dict[ContentKey, bytes], *,
             current_only: bool = True) -> list[tuple[Meta, Known]]:
        """These versions' files, in order: from here, or loaded and rendered now (bytes into `out`).
        Only versions the catalog allows (current ones unless `current_only` is False), as a load would."""
        allowed = self.cat.current if current_only else self.cat.readable
        metas = [m for m in metas if m.rid in allowed.get(m.table, ())]
        missing = [m for m in metas if (m.table, m.rid) not in self._by_row]
        if missing and self._earlier:
            missing = self._still_true(catalog, missing)
        if missing:
            for row in catalog.load_metas(self.cat, missing, current_only=current_only):
                self.of_row(row, out)
        return [(m, known) for m in metas if (known := self.get(m)) is not None]

    def _still_true(self, catalog: Catalog, metas: Sequence[Meta]) -> list[Meta]:
        """Takes an earlier generation's file of each of `metas` whose lineage is the same now (its
        content key holds the lineage it was rendered with); returns the others, to be rendered."""
        rest: list[Meta] = []
        for m in metas:
            key = (m.table, m.rid)
            if key in self._earlier and self._still_true_one(key, catalog.lineage(self.cat, m.table, m.rid)):
                self._by_row[key] = self._earlier[key]
            else:
                rest.append(m)
        return rest

    def _still_true_one(self, key: tuple[str, int], lineage: object) -> bool:
        """Whether an earlier generation's file of this version stands with the lineage it has now."""
        before = self._earlier.get(key)
        return before is not None and before.content.key == content_key(key[0], key[1], lineage)
