"""Where a DuckLake store lives, from its store URL. Pure functions: a string in, a location or a reason out.

    ducklake:postgres:dbname=memory host=/run/pg port=5432 user=recallfs;data=/shared/lake/

The part before `;data=` is DuckLake's own catalog string (a PostgreSQL connection string after
`ducklake:postgres:`); `data=` is the directory (NFS, or an object store through httpfs) that holds
the Parquet files every host reads. Each host keeps its own copy of the store, the replica, in
`replica_dir` (developer-notes/lake.md).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

LAKE_PREFIX = "ducklake:"
CATALOG_KINDS = ("postgres",)
# libpq keywords a catalog string may carry; anything else is most likely a typo
_LIBPQ_KEYS = {"dbname", "host", "hostaddr", "port", "user", "password", "passfile", "sslmode",
               "connect_timeout", "application_name", "options", "sslrootcert", "sslcert", "sslkey"}


class LakeLocationError(ValueError):
    """A store URL that does not name a lake recallfs can open."""


@dataclass(frozen=True, slots=True)
class LakeLocation:
    catalog: str  # what DuckLake attaches: "postgres:dbname=... host=..."
    data_path: str  # ends with "/"

    @property
    def url(self) -> str:
        return f"{LAKE_PREFIX}{self.catalog};data={self.data_path}"

    def key(self) -> str:
        """A short name for this lake, the same on every host that names it alike (a password aside)."""
        return hashlib.sha256(self.describe().encode()).hexdigest()[:16]

    def catalog_host(self) -> str:
        """Which PostgreSQL, in a few words: "dbname=memory host=/run/pg port=5432"."""
        keep = ("dbname", "host", "hostaddr", "port")
        return " ".join(p for p in self.catalog.partition(":")[2].split() if p.partition("=")[0] in keep)

    def describe(self) -> str:
        """The URL without a password, for messages and `recallfs status`."""
        return mask_secrets(self.url)


def is_lake(store: str | Path) -> bool:
    """Whether `store` names a lake (the scheme in any case: `DUCKLAKE:` is no file path anyone means)."""
    return str(store)[:len(LAKE_PREFIX)].lower() == LAKE_PREFIX


def parse_lake(url: str) -> LakeLocation:
    if not is_lake(url):
        raise LakeLocationError(f"{url!r} is not a lake URL (it starts with {LAKE_PREFIX!r})")
    if "'" in url:  # the URL is spliced into DuckDB's ATTACH statement
        raise LakeLocationError(f"{mask_secrets(url)}: quotes are not allowed in a lake URL")
    body = url[len(LAKE_PREFIX):]
    catalog, sep, data = body.partition(";data=")
    if ";data=" in data:
        raise LakeLocationError(f"{mask_secrets(url)}: name the data directory once")
    if not sep or not data.strip():
        raise LakeLocationError(f"{mask_secrets(url)}: name the data directory after the catalog, as "
                                "ducklake:postgres:dbname=NAME host=HOST;data=/shared/lake/")
    kind, _, conninfo = catalog.partition(":")
    if kind not in CATALOG_KINDS or not conninfo.strip():
        raise LakeLocationError(f"{mask_secrets(url)}: the catalog must be PostgreSQL "
                                "(ducklake:postgres:dbname=NAME host=HOST ...;data=DIR)")
    for part in conninfo.split():
        key, eq, value = part.partition("=")
        if not eq or not value:
            raise LakeLocationError(f"{mask_secrets(url)}: {part!r} is not KEY=VALUE")
        if key not in _LIBPQ_KEYS:
            raise LakeLocationError(f"{mask_secrets(url)}: unknown connection keyword {key!r}")
    data = data.strip()
    if "://" not in data:
        data = str(Path(data).expanduser().absolute())
    return LakeLocation(f"{kind}:{' '.join(conninfo.split())}", data.rstrip("/") + "/")


def replica_path(location: LakeLocation, replica_dir: str | Path) -> Path:
    """This host's copy of the lake: one DuckDB file per lake under `replica_dir`."""
    return Path(replica_dir).expanduser() / location.key() / "replica.duckdb"


def mask_secrets(text: str) -> str:
    """`text` with any password of a connection string starred out (messages, logs)."""
    return re.sub(r"password=[^\s\"';]+", "password=***", text)
