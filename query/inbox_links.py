"""A link written through inbox/ names a fact its writer can read, or the file is refused.

`supersedes: f-db-hots-2` (a typo), or a file name pasted where an id goes, used to be stored as written:
a link to an id no fact has retires nothing, so the old fact stayed current beside its correction, and
the writer, whose close returned 0, was never told (found 2026-12-07 by a soak). An agent writing to
inbox/ has no other channel to hear it, so such a file is refused (EINVAL, with a note naming the link).
`recallfs ingest` keeps such links: an export may name memories it does not carry.

What counts as there is what the writer can read, any version (a deleted fact can be superseded), the
facts of the same file, and the writer's own memory under an id it could not take (query/inbox_scope.py
moves such a write to an id of its own): a link to a memory hidden from the writer and one to an id
nobody wrote are refused alike, so the refusal tells the writer nothing it cannot read.
"""

from __future__ import annotations

from collections.abc import Sequence

from recallfs.query.inbox_scope import ids_held, own_id
from recallfs.query.ingest import IngestError
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

LINKS = ("supersedes", "superseded_by")


def refuse_dangling_links(store: Store, writer: Principal, records: Sequence[MemoryRecord]) -> None:
    """Raise IngestError for the first link of `records` (as written) that names no fact the writer can
    read (module doc)."""
    named = [(rec, link, target) for rec in records for link in LINKS if (target := getattr(rec, link))]
    if not named:
        return
    in_file = {rec.id for rec in records if rec.table == "facts"}
    wanted = sorted({t for _, _, t in named} - in_file)
    wanted += [own_id("facts", writer, t) for t in wanted]
    there = _readable_fact_ids(store, writer, wanted) | in_file
    for rec, link, target in named:
        if target not in there and own_id("facts", writer, target) not in there:
            name = rec.source.removeprefix("inbox:")
            raise IngestError(
                f"{name}: {link}: {target}: no fact you can read has this id, so the link would change nothing "
                "(a link names a fact's `id:`, the end of its file name after `--`; write the fact it names "
                "first, or both in one .jsonl file)")


def _readable_fact_ids(store: Store, writer: Principal, ids: list[str]) -> set[str]:
    schema = store.partition(writer.org, writer.workspace)
    if schema is None or not ids:
        return set()
    return ids_held(store, schema, writer, ids, ("facts",), readable=True)
