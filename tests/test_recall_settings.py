"""A CLI recall's own settings reach the daemon that holds the store (issue 12, item 9): applied when
one recall can take them, named in the notes with why when it cannot, and never able to change who
reads. From tables (request_settings.apply_requested) and through a real mount and its socket."""

from __future__ import annotations

import json

import pytest
from mount_helpers import Mount, module_mount, needs_fuse

from recallfs.mount.request_settings import DAEMON_ONLY, PER_REQUEST, SCOPE, apply_requested, chosen_settings
from recallfs.query.settings import SETTINGS, SettingsError, resolve

from conftest import run_cli

DAEMON = resolve({}, env={"RECALLFS_SEMANTIC": "false"})


def test_every_setting_is_classified() -> None:
    """A new setting must say whether one recall can carry it (else it would be dropped silently)."""
    names = {s.name for s in SETTINGS}
    assert names == {*PER_REQUEST, *SCOPE, *DAEMON_ONLY, "semantic"}


@pytest.mark.parametrize(("requested", "has_semantic", "changed", "semantic", "notes"), [
    ({}, True, {}, True, []),
    ({"k": 2}, False, {"k": 2}, False, []),
    ({"rerank": True, "min_score": 0.25}, True, {"rerank": True, "min_score": 0.25}, True, []),
    ({"session_weight": 0}, True, {"session_weight": 0.0}, True, []),  # JSON's 0 for 0.0
    ({"semantic": False}, True, {}, False, []),
    ({"semantic": True}, False, {}, False, ["RECALLFS_SEMANTIC=true ignored: the daemon holding this store runs "
                                            "without a semantic arm"]),
    ({"max_rows": 7}, True, {}, True, ["RECALLFS_MAX_ROWS=7 ignored: a setting of the mount's listings "
                                       "(RECALLFS_MAX_ROWS=5000)"]),
    ({"max_rows": 5000}, True, {}, True, []),  # the daemon's own value: nothing was ignored
    ({"model": "/elsewhere"}, True, {}, True, ["RECALLFS_MODEL=/elsewhere ignored: the daemon answers with the "
                                               "model it has loaded"]),
    ({"model": "/elsewhere"}, True, {}, True, ['RECALLFS_MODEL=/elsewhere ignored: the daemon answers with the '
                                               'model it has loaded (RECALLFS_MODEL="" (the default))']),
    # scope is the socket's: a request naming another agent, workspace or store changes nothing
    ({"agent": "root", "workspace": "other/ws", "store": "/x", "no_such": 1}, True, {}, True, []),
])
def test_apply_requested(requested, has_semantic, changed, semantic, notes) -> None:
    applied = apply_requested(DAEMON, requested, has_semantic=has_semantic)
    assert applied.settings == DAEMON.replace(**changed)
    assert applied.semantic is semantic
    assert len(applied.notes) == len(notes)
    for got, start in zip(applied.notes, notes, strict=True):
        assert got.startswith(start), got


@pytest.mark.parametrize("requested", [{"k": "2"}, {"k": True}, {"rerank": "yes"}, {"fusion": "magic"},
                                       {"recency": "sometimes"}])
def test_values_a_setting_cannot_take_are_refused(requested) -> None:
    with pytest.raises(SettingsError):
        apply_requested(DAEMON, requested, has_semantic=False)


def test_the_cli_sends_only_what_its_user_chose() -> None:
    env = {"RECALLFS_K": "2", "RECALLFS_RERANK": "true", "RECALLFS_AGENT": "someone", "RECALLFS_STORE": "/s"}
    cfg = resolve({}, env=env)
    assert chosen_settings(cfg, env=env) == {"k": 2, "rerank": True}


# -- through the mount ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mounted(tmp_path_factory: pytest.TempPathFactory):
    yield from module_mount(tmp_path_factory, "reqsettings")


def recall_json(mount: Mount, *args: str, **env: str) -> dict:
    """`recallfs recall ... --format json` as the mount's user, with these RECALLFS_* variables added."""
    return json.loads(run_cli("recall", *args, "--format", "json", env={**mount.env, **env}, check=True).stdout)


@pytest.mark.mount
@needs_fuse
def test_settings_given_to_the_cli_are_used_by_the_daemon(mounted: Mount) -> None:
    plain = recall_json(mounted, "flaky windows test")
    assert len(plain["hits"]) > 2 and plain["stages"]["rerank"] == "off"
    two = recall_json(mounted, "flaky windows test", RECALLFS_K="2")
    assert [h["id"] for h in two["hits"]] == [h["id"] for h in plain["hits"][:2]]
    rerank = recall_json(mounted, "flaky windows test", RECALLFS_RERANK="true")
    assert rerank["stages"]["rerank"] != "off"  # it ran (and says it had no query vector: lexical mount)


@pytest.mark.mount
@needs_fuse
def test_settings_the_daemon_cannot_honour_are_named_with_why(mounted: Mount) -> None:
    out = recall_json(mounted, "flaky windows test", RECALLFS_SEMANTIC="true", RECALLFS_MAX_ROWS="7")
    assert out["hits"] and out["degraded_reason"] == "off"
    assert any(n.startswith("RECALLFS_SEMANTIC=true ignored: the daemon holding this store runs without")
               for n in out["notes"])
    assert any(n.startswith("RECALLFS_MAX_ROWS=7 ignored") for n in out["notes"])
    text = run_cli("recall", "flaky windows test", env={**mounted.env, "RECALLFS_SEMANTIC": "true"},
                   check=True).stdout
    assert "RECALLFS_SEMANTIC=true ignored" in text
