"""The process's embedders: one per (model, device), so that the model loads once in a process, made from
the settings (`model`, `device`, the precisions); and what a process does with them as it ends."""

from __future__ import annotations

import threading

from recallfs.query.bulk_encoder import PRECISIONS as BULK_PRECISIONS
from recallfs.query.embedder import Embedder
from recallfs.query.model_files import resolve_model_path
from recallfs.query.query_encoder import PRECISIONS
from recallfs.query.settings import Settings, SettingsError, setting

_SHARED: dict[tuple[str, str], Embedder] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(model_path: str | None = None, device: str = "auto") -> Embedder:
    key = (resolve_model_path(model_path), device or "auto")
    with _SHARED_LOCK:
        emb = _SHARED.get(key)
        if emb is None:
            emb = _SHARED[key] = Embedder(key[0], device=key[1])
        return emb


def keep_query_graphs() -> None:
    """Each loaded model of this process saves its query graph, where none is saved yet (a CLI command
    that loaded the model, as it ends: the next recall then needs no model for its query)."""
    with _SHARED_LOCK:
        loaded = [emb for emb in _SHARED.values() if emb.state == "ready"]
    for emb in loaded:
        emb.keep_query_graph()


def any_loading() -> bool:
    """Whether a model of this process is still loading (the CLI does not wait for it at exit)."""
    with _SHARED_LOCK:
        return any(emb.loading for emb in _SHARED.values())


def embedder_from_settings(cfg: Settings) -> Embedder:
    """The process's embedder for the `model` and `device` settings (RECALLFS_MODEL, RECALLFS_DEVICE)."""
    if cfg.query_precision not in PRECISIONS:
        raise SettingsError(f"{setting('query_precision').env}={cfg.query_precision!r}: expected "
                            f"{', '.join(PRECISIONS)}")
    if cfg.embed_precision not in BULK_PRECISIONS:
        raise SettingsError(f"{setting('embed_precision').env}={cfg.embed_precision!r}: expected "
                            f"{', '.join(BULK_PRECISIONS)}")
    emb = shared_embedder(cfg.model, cfg.device)
    emb.load_timeout_s = cfg.model_load_timeout_s
    emb.query_precision = cfg.query_precision
    emb.embed_precision = cfg.embed_precision
    return emb


def start_warmup(cfg: Settings) -> Embedder | None:
    """Called when the daemon or the CLI starts: begin loading unless the semantic arm is off."""
    if not cfg.semantic:
        return None
    emb = embedder_from_settings(cfg)
    emb.start_warmup()
    return emb
