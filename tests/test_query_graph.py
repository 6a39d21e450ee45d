"""The saved query graph (query/query_graph.py): a process that only embeds queries loads it with ONNX Runtime
and the model's tokenizer file, never torch, and gets the model's own vectors; a graph that fails its check
is not used; a daemon serves hybrid recall from it and loads the model only when rows need vectors. Real
model, real onnxruntime, real mounts and CLI processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mount_helpers import base_env, start_mount, stop_mount

from recallfs.query.encoder_probes import AGREE
from recallfs.query.query_graph import graph_paths, has_graph, load_graph, save_graph

from conftest import fact, run_cli, write_jsonl

pytestmark = pytest.mark.slow

MODEL_MODULES = {"torch", "sentence_transformers", "transformers"}
NOTES = [fact(f"n{i}", text) for i, text in enumerate([
    "the docs deploy uses rsync to the static host",
    "Grafana dashboards read from the Prometheus in the ops cluster",
    "application logs are shipped to Loki by promtail",
    "the on-call rotation changes every Monday at ten",
])]
# Queries of every shape a user sends: empty, one word, other scripts, code, and past 256 word pieces
QUERIES = ["", "ok", "where do the logs go?", "naïve café résumé Straße — ŒUVRE ﬁle",
           "日本語のテキスト検索 東京タワーで会議をしました", "SELECT * FROM facts; -- ../../etc/passwd",
           "We moved it to eu-west last week. " * 60]


@pytest.fixture(scope="module")
def saved(minilm, tmp_path_factory) -> Path:
    if minilm.device != "cpu":
        pytest.skip("the saved query graph serves the CPU path only")
    where = tmp_path_factory.mktemp("graphs")
    assert save_graph(minilm._require(), minilm.model_path, minilm.model_id, where)
    return where


def test_the_saved_graph_gives_the_models_own_vectors(minilm, saved):
    graph = load_graph(minilm.model_path, saved)
    assert graph is not None
    for text in QUERIES:
        stock = minilm._encode([text], batch_size=1)[0]
        got = graph(text)
        assert got.dtype == np.float32 and got.shape == stock.shape
        assert float(np.dot(got, stock)) >= AGREE, text[:40]


def _damaged(where: Path, model_id: str, how: str) -> None:
    graph, check = graph_paths(model_id, where)
    saved = json.loads(check.read_text())
    if how == "graph garbage":
        graph.write_bytes(b"\x00not an onnx graph" * 100)
    elif how == "graph cut short":
        graph.write_bytes(graph.read_bytes()[: graph.stat().st_size // 2])
    elif how == "graph missing":
        graph.unlink()
    elif how == "a probe vector changed":
        saved["probes"][1]["vector"] = [-x for x in saved["probes"][1]["vector"]]
    elif how == "another cut length":
        saved["max_length"] = 128  # the long probe's word pieces then differ from the model's own
    elif how == "another model":
        saved["model"] = "other-model@0123456789"
    elif how == "another format":
        saved["format"] = 0
    elif how == "check not JSON":
        check.write_text("{not json")
        return
    check.write_text(json.dumps(saved))


@pytest.mark.parametrize("how", ["graph garbage", "graph cut short", "graph missing", "a probe vector changed",
                                 "another cut length", "another model", "another format", "check not JSON"])
def test_a_graph_that_fails_its_check_is_not_used(minilm, saved, tmp_path, how):
    where = tmp_path / "graphs"
    shutil.copytree(saved, where)
    assert load_graph(minilm.model_path, where) is not None
    _damaged(where, minilm.model_id, how)
    assert load_graph(minilm.model_path, where) is None


def test_a_graph_is_not_used_for_other_model_files(minilm, saved, tmp_path):
    """The graph is keyed by the identity of the model's files: a copy of the model with its tokenizer cut at
    another length is another model, and has no graph."""
    model = tmp_path / "model"
    shutil.copytree(minilm.model_path, model)
    config = json.loads((model / "sentence_bert_config.json").read_text())
    (model / "sentence_bert_config.json").write_text(json.dumps({**config, "max_seq_length": 64}))
    assert load_graph(str(model), saved) is None
    assert load_graph(minilm.model_path, saved) is not None


def test_a_save_that_cannot_write_changes_nothing(minilm, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    assert not save_graph(minilm._require(), minilm.model_path, minilm.model_id, blocked / "graphs")
    assert not has_graph(minilm.model_id, blocked / "graphs")


def test_a_cache_without_room_is_not_written(minilm, disk, monkeypatch):
    """A 48 MB disk cannot hold MiniLM's ~90 MB graph: the save is refused before the export (which would
    otherwise cost every later call its seconds of CPU and fail the same way), and leaves no part."""
    import recallfs.query.query_graph as query_graph

    exports: list[str] = []
    monkeypatch.setattr(query_graph, "export_graph", lambda *args: exports.append("export"))
    assert not save_graph(minilm._require(), minilm.model_path, minilm.model_id, disk / "graphs")
    assert exports == []
    assert [p.name for p in (disk / "graphs").iterdir() if not p.name.endswith(".lock")] == []


def test_a_save_another_process_is_making_is_left_to_it(minilm, tmp_path):
    import fcntl

    graph = graph_paths(minilm.model_id, tmp_path)[0]
    with open(tmp_path / f".{graph.name}.lock", "w") as held:  # as a second process's save holds it
        fcntl.flock(held, fcntl.LOCK_EX)
        assert not save_graph(minilm._require(), minilm.model_path, minilm.model_id, tmp_path)
    assert not graph.exists()
    assert save_graph(minilm._require(), minilm.model_path, minilm.model_id, tmp_path)  # released: saved
    assert load_graph(minilm.model_path, tmp_path) is not None


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> dict[str, str]:
    """A store with vectors, and a cache directory of its own that no graph is saved in yet."""
    root = tmp_path_factory.mktemp("graph-cli")
    env = {**base_env(root, RECALLFS_SEMANTIC="true"), "XDG_CACHE_HOME": str(root / "cache")}
    run_cli("ingest", str(write_jsonl(root / "notes.jsonl", NOTES)), env=env, check=True)
    return env


def _recall(env: dict[str, str], *args: str) -> tuple[dict, set[str], str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "recallfs.mount.cli", "recall", *args,
                           "--format", "json"], capture_output=True, text=True, env={**os.environ, **env},
                          stdin=subprocess.DEVNULL, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    said = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("import time:"))
    return json.loads(proc.stdout), imported, said


def test_an_ingest_saves_the_graph_and_a_cli_recall_then_needs_no_model(cache, tmp_path):
    # the ingest that embedded the notes saved the graph as it ended
    graphs = Path(cache["XDG_CACHE_HOME"]) / "recallfs" / "query-graphs"
    assert sorted(p.suffix for p in graphs.iterdir() if not p.name.startswith(".")) == [".json", ".onnx"]
    assert not list(graphs.glob("*.part"))
    fast, imported, said = _recall(cache, "where do the logs go")
    assert not MODEL_MODULES & imported
    assert said == ""  # no "this call loads the model" hint: it did not
    assert fast["degraded"] is False and any("semantic" in h["arms"] for h in fast["hits"])
    # the same answer, figure for figure, as a call that loads the model (a cache with no graph)
    slow, imported, said = _recall({**cache, "XDG_CACHE_HOME": str(tmp_path / "empty")}, "where do the logs go")
    assert MODEL_MODULES <= imported and "recallfs mount" in said
    assert [(h["id"], h["score"]) for h in fast["hits"]] == [(h["id"], h["score"]) for h in slow["hits"]]
    # and that call saved a graph of its own as it ended, for the next
    [check] = graphs.glob("*.json")
    assert has_graph(json.loads(check.read_text())["model"],
                     tmp_path / "empty" / "recallfs" / "query-graphs")


def test_a_damaged_graph_falls_back_to_the_model(cache, tmp_path):
    where = tmp_path / "cache"
    shutil.copytree(cache["XDG_CACHE_HOME"], where)
    [graph] = (where / "recallfs" / "query-graphs").glob("*.onnx")
    graph.write_bytes(b"garbage")
    out, imported, _said = _recall({**cache, "XDG_CACHE_HOME": str(where)}, "who is on call")
    assert MODEL_MODULES <= imported
    assert out["degraded"] is False and any("semantic" in h["arms"] for h in out["hits"])


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def test_a_daemon_serves_from_the_graph_and_loads_the_model_for_rows(cache, tmp_path):
    mount = start_mount(Path(cache["RECALLFS_STORE"]).parent, cache, name="mnt-graph")
    try:
        info = mount.mount_info()
        pid = info["pid"]
        hits = json.loads((mount.path / "recall" / "where do the logs go" / "results.json").read_text())
        assert hits["degraded"] is False and any("semantic" in h["arms"] for h in hits["hits"])
        assert mount.mount_info()["detail"]["query_embedding"] == "onnx float32, saved graph"
        assert "libtorch" not in _maps(pid)  # the model was never loaded: no torch in the daemon
        # a write that needs vectors loads the model, and its rows are found by meaning
        more = write_jsonl(tmp_path / "more.jsonl", [fact("m1", "the cafeteria serves ramen on Thursdays")])
        mount.cli("ingest", str(more), timeout=300)
        assert "libtorch" in _maps(pid)
        found = json.loads((mount.path / "recall" / "noodle lunch" / "results.json").read_text())
        assert any(h["source_id"] == "m1" and "semantic" in h["arms"] for h in found["hits"])
        assert mount.mount_info()["health"] == "ok"
    finally:
        stop_mount(mount)
