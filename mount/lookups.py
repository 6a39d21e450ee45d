"""One name below a directory, resolved without building the directory's listing.

Listings are capped at max_rows and cost a render of every entry; a lookup (`cat facts/x--f-1.md`,
`ls sessions/s1/`) answers one name from the catalog. The path grammar has already parsed the name
(mount/paths.py); the route's params say what it names. A name that was shortened to fit 255 bytes
cannot be decoded: `NeedsListing` sends the caller to the listing, which knows it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from recallfs.mount.entries import ContentKey, Entry, NeedsListing, NotFound, directory
from recallfs.mount.listings import entity_entry, fact_entries, turn_lookup
from recallfs.mount.names import decode_value, encode_value
from recallfs.mount.paths import Kind, Match
from recallfs.query.catalog import Catalog
from recallfs.query.labels import label
from recallfs.query.readable import Readable

Found = tuple[Entry, dict[ContentKey, bytes]]  # the entry, and rendered rows for the content cache
# A directory named by a stored value: the route param that holds its name, the param it lists by, and
# the catalog's grouping that says which values exist.
_VALUE_DIRS: dict[Kind, tuple[str, str, Callable[[Readable], dict[str, Any]]]] = {
    Kind.KIND: ("kind_name", "kind", Readable.kinds),
    Kind.TAG: ("tag_name", "tag", Readable.tags),
    Kind.SESSION: ("session_name", "session", Readable.sessions),
}


class Lookups:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def lookup(self, cat: Readable, parent_kind: Kind, parent_params: dict[str, Any], name: str, match: Match
               ) -> Found:
        """`name` below a directory of `parent_kind` (listed by `parent_params`), which the grammar resolved
        to `match`. Raises NotFound, or NeedsListing when only the listing can tell."""
        if match.kind is Kind.FACT:
            return self._fact(cat, parent_kind, parent_params, name, str(match.params["id"]))
        if match.kind in _VALUE_DIRS:
            return self._value_dir(cat, match), {}
        if match.kind is Kind.TURN:
            return turn_lookup(self.catalog, cat, str(parent_params["session"]), name)
        handler = self._BY_KIND.get(match.kind)
        if handler is None:
            raise NeedsListing(name)
        return handler(self, cat, match), {}

    def _fact(self, cat: Readable, parent_kind: Kind, parent_params: dict[str, Any], name: str, mem_id: str
              ) -> Found:
        metas = list(cat.facts_by_id().get(mem_id, []))
        if parent_kind is Kind.KIND:
            metas = [m for m in metas if label(m.kind) == parent_params["kind"]]
        elif parent_kind is Kind.TAG:
            metas = [m for m in metas if parent_params["tag"] in map(label, m.tags)]
        out: dict[ContentKey, bytes] = {}
        for entry in fact_entries(self.catalog, cat, metas[:1], out):
            if entry.name == name:  # only the canonical name: one file, one name
                return entry, out
        raise NotFound(name)

    @staticmethod
    def _value_dir(cat: Readable, match: Match) -> Entry:
        name_param, key, grouping = _VALUE_DIRS[match.kind]
        name = str(match.params[name_param])
        value = decode_value(name)
        if value is None:
            raise NeedsListing(name)
        # a label typed in another Unicode form (NFD) names the same directory (query/labels.py)
        if value not in grouping(cat) or encode_value(value) != label(name):
            raise NotFound(name)
        return directory(name, match.kind, [(key, value)], {key: value})

    def _entity(self, cat: Readable, match: Match) -> Entry:
        name = str(match.params["entity_name"])
        value = decode_value(name, ".md")
        if value is None:
            raise NeedsListing(name)
        metas = cat.entities().get(value)
        if not metas or encode_value(value, ".md") != label(name):
            raise NotFound(name)
        return entity_entry(value, self.catalog.load_metas(cat, metas))

    def _versions(self, cat: Readable, match: Match) -> Entry:
        mem_id = str(match.params["id"])
        if mem_id not in cat.history_ids():
            raise NotFound(mem_id)
        return directory(mem_id, Kind.VERSIONS, params={"id": mem_id})

    _BY_KIND: ClassVar[dict[Kind, Callable[[Lookups, Readable, Match], Entry]]] = {
        Kind.ENTITY: _entity, Kind.VERSIONS: _versions,
    }
