"""Find a data set's files, build or reuse its eval store, and resolve its questions (`setup`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallfs.evals import datasets
from recallfs.evals.devsets import DEVSETS
from recallfs.evals.questions import EvalError, Prepared, prepare_demo, prepare_locomo
from recallfs.evals.store_cache import default_store_path, ensure_store, prune_cache
from recallfs.query.store import Store, StoreError


@dataclass(slots=True)
class EvalSetup:
    dataset: str
    data_files: list[Path]
    store_path: Path
    store_action: str
    prepared: Prepared


def _load_records(dataset: str, data: Path) -> Callable[[], list[Any]]:
    from recallfs.query.ingest_file import load_file

    if dataset == "locomo":
        return lambda: load_file(data, "locomo", org=datasets.LOCOMO_ORG, workspace="unused", agent="locomo")
    # The currentness set's records name their own workspaces; the demo's default to demo/tern.
    org, ws = datasets.DEMO_WORKSPACE
    return lambda: load_file(data, "jsonl", org=org, workspace=ws, agent="demo")


# dataset -> (default memory file, default queries file, the queries' name beside another memory file)
_FILES = {
    "demo": (datasets.DEMO_MEMORY, datasets.DEMO_QUERIES, "demo_queries.json"),
    "currentness": (datasets.CURRENTNESS_MEMORY, datasets.CURRENTNESS_QUERIES, "currentness_queries.json"),
}


def _data_files(dataset: str, data: Path | None) -> tuple[Path, list[Path], Path]:
    """(the memory file, every file the store is keyed on, the questions file)."""
    if dataset == "locomo":
        data = data or datasets.LOCOMO_DEFAULT
        if not data.exists():
            raise EvalError(f"LoCoMo data not found at {data} (eval-only data, not shipped; pass --data)")
        return data, [data], data
    if dataset not in _FILES:
        raise EvalError(f"unknown dataset {dataset!r}")
    memory, questions, name = _FILES[dataset]
    data = data or memory
    queries = questions if data == memory else data.with_name(name)
    for path in (data, queries):
        if not path.exists():
            raise EvalError(f"{dataset} eval needs {path}, which does not exist")
    return data, [data, queries], queries


def _prepare(dataset: str, opened: Store, raw: Any, every: int | None, limit: int | None) -> Prepared:
    if dataset == "locomo":
        return prepare_locomo(opened, datasets.locomo_items(raw), every=every, limit=limit)
    if dataset == "currentness":
        return prepare_demo(opened, datasets.currentness_items(raw), every=every, limit=limit, dataset=dataset)
    return prepare_demo(opened, datasets.demo_items(raw), every=every, limit=limit)


def setup(dataset: str, *, data: Path | None = None, store: Path | None = None,
          every: int | None = None, limit: int | None = None, personas: int | None = None,
          ) -> tuple[EvalSetup, Store]:
    """Find the data, build or reuse the eval store, resolve the questions. The store is open (read-only).
    The memory_dev sets (`data`: their directory; `personas`: RealMem's first N) are in devset_eval.py."""
    from recallfs.query.ingest import IngestError

    if dataset in DEVSETS:
        from recallfs.evals.devset_eval import setup_dev

        return setup_dev(dataset, base=data, store=store, every=every, limit=limit, personas=personas)

    data, data_files, queries = _data_files(dataset, data)
    store_path = store.expanduser() if store else default_store_path(dataset, data_files)
    try:
        action = ensure_store(store_path, _load_records(dataset, data), refresh=store is not None)
        if action == "built" and store is None:
            prune_cache(dataset)
        opened = Store(store_path, read_only=True, create=False)
    except (IngestError, StoreError) as exc:
        raise EvalError(str(exc)) from None
    try:
        prepared = _prepare(dataset, opened, datasets.read_json(queries), every, limit)
    except (datasets.DatasetError, KeyError, TypeError) as exc:
        opened.close()
        raise EvalError(f"{queries}: {exc}") from None
    return EvalSetup(dataset, data_files, store_path, action, prepared), opened

