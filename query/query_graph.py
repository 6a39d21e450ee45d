"""The query graph kept on disk, so that a process which only embeds queries never imports torch.

A daemon that only reads, and a one-off `recallfs recall`, need the model for one thing: a query's
vector. Loading it through sentence-transformers imports torch, transformers and their dependencies
(~0.4 GB of the daemon's memory, and most of a CLI recall's seconds) to run a graph ONNX Runtime runs
alone (query/onnx_query.py). So a process that has the model loaded anyway (the daemon once its query
path is up, a CLI command that loaded it) saves that graph here once, with a check; later processes load
it with ONNX Runtime and the model's own `tokenizer.json` (the `tokenizers` library), in ~0.3 s. The
model itself then loads only when something needs more than a query: rows to embed.

The check: a few probe texts, with the word pieces the model's own tokenizer gave them and the model's
own vectors. A graph is used only when the plain tokenizer gives the same word pieces and the graph
vectors that agree (AGREE) with the saved ones, tested when it is saved and again at every load; so a
graph made for other model files, a tokenizer that would cut differently, or a damaged file is not used
(the process loads the model as before). Files: `$XDG_CACHE_HOME/recallfs/query-graphs/<model>.onnx` and
`.json` beside it (~90 MB for MiniLM), written under temporary names and renamed.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from recallfs.query import diskspace
from recallfs.query.encoder_probes import AGREE, PROBES
from recallfs.query.model_files import model_identity, offline
from recallfs.query.onnx_query import OnnxQueryEncoder, export_graph, onnx_session
from recallfs.query.query_encoder import plain_sentence, plain_shape, stock_vector, tokenizer_of
from recallfs.query.settings import cache_home

log = logging.getLogger("recallfs.embedder")

FORMAT = 1  # the layout of the saved check; a graph saved in another is made again
# PROBES, and text the tokenizer's normalizer changes: accents, compatibility forms, other scripts
GRAPH_PROBES = (*PROBES, "Ünïcödé café, ＦＵＬＬ-width ﬁgures… and 日本語のメモ")
_STALE_TEMP_S = 3600.0
# Held while a graph is exported and written. A process that exits meanwhile (a daemon unmounted seconds
# after it started) waits for it at exit: torch killed mid-export aborts the interpreter ("terminate
# called without an active exception", exit -6).
_SAVING = threading.Lock()
_EXIT_WAIT_S = 60.0


@atexit.register
def _wait_for_a_save() -> None:
    if _SAVING.acquire(timeout=_EXIT_WAIT_S):
        _SAVING.release()


def graphs_dir() -> Path:
    return cache_home() / "query-graphs"


def graph_paths(model_id: str, where: Path | None = None) -> tuple[Path, Path]:
    """(graph, check) for a model identity (query/model_files.model_identity)."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", model_id)
    folder = where or graphs_dir()
    return folder / f"{stem}.onnx", folder / f"{stem}.json"


class PlainTokenizer:
    """text -> the model's input ids and mask, as sentence-transformers' Transformer.preprocess makes
    them for one text (stripped, cut at max_seq_length word pieces), from the model's tokenizer.json."""

    def __init__(self, tokenizer_json: str, max_length: int) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_str(tokenizer_json)
        self._tokenizer.no_padding()  # tokenizer.json may carry a fixed padding for other uses
        self._tokenizer.enable_truncation(max_length=max_length)

    def ids(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text.strip()).ids)

    def __call__(self, text: str) -> dict[str, np.ndarray]:
        encoded = self._tokenizer.encode(text.strip())
        return {"ids": np.asarray([encoded.ids], dtype=np.int64),
                "mask": np.asarray([encoded.attention_mask], dtype=np.int64)}


def load_graph(model_path: str, where: Path | None = None) -> OnnxQueryEncoder | None:
    """The saved query graph for the model at `model_path`, checked; None where there is none, it does
    not pass its check, or onnxruntime or tokenizers is not installed."""
    offline()  # TOKENIZERS_PARALLELISM off, as for the model: no thread pool for one query's word pieces
    try:
        model_id = model_identity(model_path)  # reads the JSON files in Python: a hung file system waits here
        graph, check = graph_paths(model_id, where)
        if not check.is_file():
            return None
        saved = json.loads(check.read_text())
        if saved.get("format") != FORMAT or saved.get("model") != model_id:
            return None
        tokenizer = PlainTokenizer((Path(model_path) / "tokenizer.json").read_text(), int(saved["max_length"]))
        encoder = OnnxQueryEncoder(tokenizer, onnx_session(str(graph)))
    except Exception as exc:  # a damaged or foreign file, a missing library: the model's own path
        log.info("saved query graph not used: %s: %s", type(exc).__name__, exc)
        return None
    problem = _disagreement(encoder, tokenizer, saved.get("probes") or [])
    if problem:
        log.info("saved query graph %s not used: %s", graph, problem)
        return None
    return encoder


def has_graph(model_id: str, where: Path | None = None) -> bool:
    """Whether a graph for this model identity was saved (not checked: load_graph does that)."""
    try:
        saved = json.loads(graph_paths(model_id, where)[1].read_text())
    except (OSError, ValueError):
        return False
    return isinstance(saved, dict) and saved.get("format") == FORMAT and saved.get("model") == model_id


def save_graph(model: Any, model_path: str, model_id: str, where: Path | None = None) -> bool:
    """Export a loaded SentenceTransformer's query graph (the plain shape: query/query_encoder.py) with
    its check, unless it is saved already. True when a checked graph is there afterwards."""
    if not plain_shape(model):
        return False
    with _SAVING:
        if has_graph(model_id, where):
            return True
        graph = graph_paths(model_id, where)[0]
        try:
            graph.parent.mkdir(parents=True, exist_ok=True)
            lock = os.open(graph.parent / f".{graph.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # no room, a read-only cache: the next process loads the model
            log.info("query graph not saved to %s: %s", graph.parent, exc)
            return False
        try:
            # Eight agents' first recalls end together: one exports (~2 s of CPU), the others leave it to it
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            return False
        try:
            if has_graph(model_id, where):
                return True
            need, free = _graph_need(model_path), diskspace.free_bytes(graph.parent)
            if free < need:  # checked before the export: a full cache must not cost every call ~2 s of CPU
                log.info("query graph not saved to %s: %s free, it needs about %s", graph.parent,
                         diskspace.size(free), diskspace.size(need))
                return False
            return _save(model, model_path, model_id, where)
        finally:
            os.close(lock)  # releases the lock


def _save(model: Any, model_path: str, model_id: str, where: Path | None) -> bool:
    graph, check = graph_paths(model_id, where)
    part = graph.with_name(f".{graph.name}.{os.getpid()}.part")
    check_part = check.with_name(f".{check.name}.{os.getpid()}.part")
    try:
        _drop_stale_parts(graph.parent)
        first = model[0]
        preprocess = tokenizer_of(first)
        probes = [{"text": t, "ids": preprocess([t])["input_ids"][0].tolist(),
                   "vector": stock_vector(model, t).tolist()} for t in GRAPH_PROBES]
        export_graph(plain_sentence(first.auto_model), preprocess([PROBES[1]]), str(part))
        tokenizer = PlainTokenizer((Path(model_path) / "tokenizer.json").read_text(), int(first.max_seq_length))
        problem = _disagreement(OnnxQueryEncoder(tokenizer, onnx_session(str(part))), tokenizer, probes)
        if problem:
            log.info("query graph not saved: %s", problem)
            return False
        check_part.write_text(json.dumps({"format": FORMAT, "model": model_id, "max_length": first.max_seq_length,
                                          "saved": time.strftime("%Y-%m-%dT%H:%M:%S"), "probes": probes}))
        part.replace(graph)
        check_part.replace(check)  # last: a graph counts as saved only with its check beside it
        log.info("query graph saved to %s", graph)
        return True
    except Exception as exc:  # no room, a read-only cache, no exporter: the next process loads the model
        log.info("query graph not saved to %s: %s: %s", graph.parent, type(exc).__name__, exc)
        return False
    finally:
        for left in (part, check_part):
            try:
                left.unlink(missing_ok=True)
            except OSError:  # its folder could not be made
                pass


def _disagreement(encoder: OnnxQueryEncoder, tokenizer: PlainTokenizer, probes: list[dict[str, Any]]) -> str:
    """Why the graph and tokenizer do not reproduce the saved probes ("" when they do)."""
    if len(probes) < len(PROBES):
        return "its check holds too few probes"
    for probe in probes:
        if tokenizer.ids(probe["text"]) != probe["ids"]:
            return f"the tokenizer cuts {probe['text'][:40]!r} differently"
        cosine = float(np.dot(encoder(probe["text"]), np.asarray(probe["vector"], dtype=np.float32)))
        if not cosine >= AGREE:
            return f"its vector for {probe['text'][:40]!r} is at cosine {cosine:.6f} to the model's"
    return ""


def _graph_need(model_path: str) -> int:
    """Bytes a saved graph takes, about: the float32 weights it holds, and room to spare."""
    weights = sum(f.stat().st_size for f in Path(model_path).rglob("*")
                  if f.is_file() and f.suffix in (".safetensors", ".bin"))
    return weights + weights // 4 + (16 << 20)


def _drop_stale_parts(folder: Path) -> None:
    """Temporary files of a save that was killed (an hour old: a live save takes seconds)."""
    for part in folder.glob(".*.part"):
        try:
            if time.time() - part.stat().st_mtime > _STALE_TEMP_S:
                part.unlink()
        except OSError:
            pass
