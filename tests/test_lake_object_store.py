"""A lake whose data path is object storage (s3://): DuckLake writes its Parquet files through DuckDB's
httpfs extension, loaded from its package, to an S3-compatible server on 127.0.0.1 (moto's server,
installed with the dev dependencies), with the credentials and endpoint from the AWS variables."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from lake_helpers import LakeSpec, host_env

from conftest import fact, run_cli, write_jsonl

MOTO = Path(sys.executable).parent / "moto_server"
pytestmark = pytest.mark.skipif(not MOTO.exists(), reason="moto_server is not installed (make setup installs it)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def s3() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([str(MOTO), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(urllib.request.Request(f"{endpoint}/lake-bucket", method="PUT"), timeout=2)
                break
            except OSError:
                time.sleep(0.05)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_lake_in_object_storage(lake: LakeSpec, s3: str, tmp_path: Path) -> None:
    url = lake.url.split(";data=")[0] + ";data=s3://lake-bucket/memory/"
    aws = {"AWS_ACCESS_KEY_ID": "recallfs", "AWS_SECRET_ACCESS_KEY": "not-checked", "AWS_REGION": "us-east-1",
           "AWS_ENDPOINT_URL": s3}
    a = {**host_env(tmp_path, "a", lake), **aws, "RECALLFS_STORE": url}
    b = {**host_env(tmp_path, "b", lake), **aws, "RECALLFS_STORE": url}
    # more than DuckLake inlines into PostgreSQL, so Parquet files are written to the bucket
    facts = [fact(f"s{i}", f"the tide gauge {i} reads high water") for i in range(50)]
    run_cli("ingest", str(write_jsonl(tmp_path / "s.jsonl", facts)), env=a, check=True)
    proc = run_cli("recall", "--format", "json", "--arm", "lexical", "tide gauge high water", env=b, check=True)
    assert json.loads(proc.stdout)["total_candidates"] == 50
    listing = urllib.request.urlopen(f"{s3}/lake-bucket?list-type=2", timeout=10).read().decode()
    assert ".parquet" in listing and "memory/" in listing
    assert not list(Path.cwd().glob("s3:*")) and not list(tmp_path.glob("**/s3:*"))  # no local directory by that name
