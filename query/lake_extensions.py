"""DuckDB's ducklake and postgres extensions, loaded from their PyPI packages by path, never fetched.

Both ship as `duckdb-extension-<name>` wheels pinned with DuckDB. ducklake loads by its path. The
postgres one does not: DuckDB derives the entry point from the file name, and the extension's
internal name is `postgres_scanner`, so it is loaded through a link of that name in a private
directory. Autoloading stays off (fts_extension.DUCKDB_CONFIG): `INSTALL postgres` by name would go
to the network.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

import duckdb

# extension -> (package, the file name DuckDB must see to find the entry point)
_PACKAGES = {"ducklake": ("duckdb_extension_ducklake", "ducklake"),
             "postgres": ("duckdb_extension_postgres", "postgres_scanner"),
             "httpfs": ("duckdb_extension_httpfs", "httpfs")}


class LakeExtensionError(RuntimeError):
    """An extension package is not installed (or does not match this DuckDB)."""


def extension_file(name: str) -> Path:
    package, _ = _PACKAGES[name]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise LakeExtensionError(f"the {package.replace('_', '-')} package is not installed: "
                                 "pip install 'recallfs[lake]' (or run `make setup`)")
    version = duckdb.__version__
    path = Path(next(iter(spec.submodule_search_locations))) / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise LakeExtensionError(f"{package} has no build for DuckDB {version} (looked for {path})")
    return path


def _linked(name: str) -> Path:
    """The extension's file under the name DuckDB needs, as a link in a directory of this user's."""
    source = extension_file(name)
    _, loaded_as = _PACKAGES[name]
    if source.stem == loaded_as:
        return source
    directory = Path(tempfile.gettempdir()) / f"recallfs-extensions-{os.getuid()}" / f"v{duckdb.__version__}"
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    link = directory / f"{loaded_as}.duckdb_extension"
    if not (link.is_symlink() and Path(os.readlink(link)) == source):
        tmp = directory / f".{loaded_as}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(source)
        os.replace(tmp, link)  # atomic: two processes linking at once both end with a good link
    return link


def load_lake_extensions(conn: duckdb.DuckDBPyConnection, data_path: str = "") -> None:
    """ducklake and postgres; httpfs too when the data path is a URL (s3://...), with an S3 secret made
    from the standard AWS variables when they are set (`s3_secret_sql`)."""
    remote = "://" in data_path
    for name in ("ducklake", "postgres", *(("httpfs",) if remote else ())):
        try:
            conn.execute(f"LOAD '{_linked(name)}'")
        except duckdb.Error as exc:
            raise LakeExtensionError(f"cannot load DuckDB's {name} extension: {str(exc).splitlines()[0]}") from None
    secret = s3_secret_sql(os.environ) if data_path.startswith(("s3://", "s3a://", "r2://", "gcs://")) else None
    if secret:
        conn.execute(secret)


def s3_secret_sql(env: Mapping[str, str]) -> str | None:
    """A DuckDB S3 secret from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION (or
    AWS_DEFAULT_REGION) and AWS_ENDPOINT_URL (an S3-compatible store: path-style URLs); None without keys
    (httpfs then tries anonymous access)."""
    key, secret = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        return None
    parts = {"TYPE": "s3", "KEY_ID": key, "SECRET": secret,
             "REGION": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"}
    if env.get("AWS_SESSION_TOKEN"):
        parts["SESSION_TOKEN"] = env["AWS_SESSION_TOKEN"]
    endpoint = env.get("AWS_ENDPOINT_URL", "")
    if endpoint:
        scheme, _, host = endpoint.rstrip("/").rpartition("://")
        parts.update(ENDPOINT=host, URL_STYLE="path", USE_SSL="true" if scheme != "http" else "false")
    body = ", ".join(f"{k} {v}" if k in ("TYPE", "USE_SSL") else f"{k} {_quoted(v)}" for k, v in parts.items())
    return f"CREATE OR REPLACE SECRET recallfs_lake ({body})"


def _quoted(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
