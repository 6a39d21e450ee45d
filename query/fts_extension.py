"""Load DuckDB's full-text-search extension from the packaged wheel: never from the network."""

from __future__ import annotations

from pathlib import Path

import duckdb

DUCKDB_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def fts_extension_path() -> Path:
    import duckdb_extension_fts

    version = duckdb.__version__
    path = Path(duckdb_extension_fts.__file__).parent / "extensions" / f"v{version}" / "fts.duckdb_extension"
    if not path.exists():
        raise RuntimeError(
            f"the packaged FTS extension for DuckDB {version} is missing ({path}); "
            "install duckdb-extension-fts with the same version as duckdb"
        )
    return path


def load_fts(conn: duckdb.DuckDBPyConnection) -> None:
    conn.execute(f"LOAD '{fts_extension_path()}'")
