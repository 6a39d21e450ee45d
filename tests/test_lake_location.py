"""Lake store URLs, from a table: what parses, what is refused and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallfs.query.lake_location import LakeLocationError, is_lake, parse_lake, replica_path

GOOD = [
    ("ducklake:postgres:dbname=mem host=/run/pg port=5432 user=r;data=/shared/lake",
     "postgres:dbname=mem host=/run/pg port=5432 user=r", "/shared/lake/"),
    ("ducklake:postgres:dbname=mem  host=db.internal;data=/shared/lake/",
     "postgres:dbname=mem host=db.internal", "/shared/lake/"),
    ("ducklake:postgres:dbname=mem;data=s3://bucket/lake", "postgres:dbname=mem", "s3://bucket/lake/"),
    ("DuckLake:postgres:dbname=mem;data=/shared/lake", "postgres:dbname=mem", "/shared/lake/"),  # any case
]

BAD = [
    ("ducklake:postgres:dbname=mem", "name the data directory"),
    ("ducklake:postgres:dbname=mem;data=", "name the data directory"),
    ("ducklake:sqlite:x.db;data=/d", "the catalog must be PostgreSQL"),
    ("ducklake:postgres:;data=/d", "the catalog must be PostgreSQL"),
    ("ducklake:postgres:dbname=mem hots=x;data=/d", "unknown connection keyword 'hots'"),
    ("ducklake:postgres:dbname;data=/d", "is not KEY=VALUE"),
    ("ducklake:postgres:dbname=m' x=1;data=/d", "quotes are not allowed"),
    ("ducklake:postgres:dbname=mem;data=/a;data=/b", "name the data directory once"),
    ("/var/store.duckdb", "is not a lake URL"),
]


@pytest.mark.parametrize(("url", "catalog", "data"), GOOD)
def test_lake_urls_parse(url: str, catalog: str, data: str) -> None:
    loc = parse_lake(url)
    assert (loc.catalog, loc.data_path) == (catalog, data)
    assert parse_lake(loc.url) == loc  # the canonical form parses to itself


@pytest.mark.parametrize(("url", "why"), BAD)
def test_bad_lake_urls_say_why(url: str, why: str) -> None:
    with pytest.raises(LakeLocationError, match=why.replace("(", r"\(")):
        parse_lake(url)


def test_passwords_never_reach_messages() -> None:
    loc = parse_lake("ducklake:postgres:dbname=m password=s3cret;data=/d")
    assert "s3cret" not in loc.describe()
    with pytest.raises(LakeLocationError) as err:
        parse_lake("ducklake:postgres:dbname=m password=s3cret")
    assert "s3cret" not in str(err.value)


def test_relative_data_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_lake("ducklake:postgres:dbname=m;data=lake").data_path == f"{tmp_path}/lake/"


def test_each_lake_has_its_own_replica_and_hosts_agree_on_its_name(tmp_path: Path) -> None:
    a = parse_lake("ducklake:postgres:dbname=a;data=/d")
    b = parse_lake("ducklake:postgres:dbname=b;data=/d")
    assert replica_path(a, tmp_path) != replica_path(b, tmp_path)
    assert replica_path(a, tmp_path) == replica_path(parse_lake("ducklake:postgres:dbname=a ;data=/d/"), tmp_path)
    assert is_lake(a.url) and not is_lake(str(tmp_path / "store.duckdb"))


SECRETS = [
    ({}, None),
    ({"AWS_ACCESS_KEY_ID": "k"}, None),  # a key without its secret: anonymous access is tried
    ({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"},
     "CREATE OR REPLACE SECRET recallfs_lake (TYPE s3, KEY_ID 'k', SECRET 's', REGION 'us-east-1')"),
    ({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "it's", "AWS_DEFAULT_REGION": "eu-west-1",
      "AWS_ENDPOINT_URL": "http://127.0.0.1:9000/"},
     "CREATE OR REPLACE SECRET recallfs_lake (TYPE s3, KEY_ID 'k', SECRET 'it''s', REGION 'eu-west-1', "
     "ENDPOINT '127.0.0.1:9000', URL_STYLE 'path', USE_SSL false)"),
    ({"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "r", "AWS_SESSION_TOKEN": "t",
      "AWS_ENDPOINT_URL": "https://minio.example"},
     "CREATE OR REPLACE SECRET recallfs_lake (TYPE s3, KEY_ID 'k', SECRET 's', REGION 'r', SESSION_TOKEN 't', "
     "ENDPOINT 'minio.example', URL_STYLE 'path', USE_SSL true)"),
]


@pytest.mark.parametrize(("env", "sql"), SECRETS)
def test_s3_secret_from_the_aws_variables(env: dict[str, str], sql: str | None) -> None:
    from recallfs.query.lake_extensions import s3_secret_sql

    assert s3_secret_sql(env) == sql


def test_a_password_in_an_error_is_starred_out() -> None:
    from recallfs.query.lake import why_unreachable

    err = RuntimeError('IO Error: Failed to attach "postgres:dbname=m password=s3cret host=h": schema "x" missing')
    assert "s3cret" not in why_unreachable(err) and "password=***" in why_unreachable(err)
    down = RuntimeError('Unable to connect to Postgres at "dbname=m password=p4ss": connection to server failed: '
                        'FATAL: password authentication failed for user "r"')
    assert why_unreachable(down) == 'PostgreSQL did not answer (FATAL: password authentication failed for user "r")'
