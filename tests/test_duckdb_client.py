"""DuckDB's Python client looked for pandas on every execute and fetch, a failed import each time (a
search of sys.path under the import lock) where pandas is not installed; opening a store now declares it
absent once. Run in a fresh interpreter: the test process's own imports must not decide the answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = r"""
import collections, importlib.util, sys
from recallfs.query.store import Store
installed = importlib.util.find_spec("pandas") is not None
looked = collections.Counter()
class Log:
    def find_spec(self, name, path=None, target=None):
        looked[name] += 1
        return None
with Store(sys.argv[1]) as store:
    sys.meta_path.insert(0, Log())
    with store.transaction() as cur:
        for _ in range(5):
            cur.execute("SELECT x FROM (SELECT unnest(?::VARCHAR[]) AS x) WHERE x <> ?", [["a", "b"], "a"]).fetchall()
print(installed, looked["pandas"])
"""


def test_a_store_query_makes_no_import_of_a_missing_pandas(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "s.duckdb")], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    installed, looked = proc.stdout.split()
    # not installed: declared absent; installed: DuckDB imported it once, before the log was in place
    assert looked == "0", f"{looked} imports of pandas in 5 queries (installed: {installed})"
