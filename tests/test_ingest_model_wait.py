"""An ingest waits for the embedding model only when it has something to embed (the real MiniLM)."""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path

from recallfs.query.embedder import Embedder
from recallfs.query.ingest_file import ingest_records
from recallfs.query.records import MemoryRecord
from recallfs.query.store import Store
from recallfs.query.vector_write import missing_count


class _GatedLoad(Embedder):
    """The packaged model, whose load waits for `gate`: a model still loading (a cold disk, a slow
    file system) for as long as the test wants."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate
        self.load_timeout_s = 600

    def _load_model(self):  # type: ignore[no-untyped-def]
        self.gate.wait()
        return super()._load_model()


def _facts(*texts: str) -> list[MemoryRecord]:
    return [MemoryRecord(table="facts", source_id=f"f{i}", content=text, created_at=datetime(2026, 5, 1 + i),
                         org="acme", workspace="ops", agent="maya", kind="fact")
            for i, text in enumerate(texts)]


def test_a_file_ingested_again_does_not_wait_for_the_model_to_load(tmp_path: Path, minilm) -> None:
    first = _facts("the billing service moved to eu-west", "backups run nightly at two",
                   "the staging database is paused for the audit")
    gate = threading.Event()
    loading = _GatedLoad(gate)
    with Store(tmp_path / "s.duckdb") as store:
        ingest_records(store, first, embedder=minilm)
        loading.start_warmup()
        reports = []
        again = threading.Thread(target=lambda: reports.append(ingest_records(store, first, embedder=loading)))
        again.start()
        again.join(60)
        try:
            assert not again.is_alive(), "an ingest of unchanged rows waited for the model to load"
            assert loading.state == "loading"
            assert reports[0].unchanged == 3 and reports[0].written == 0
        finally:
            gate.set()
            again.join()
        # a new row is something to embed: that ingest waits for the model, and the row gets its vector
        report = ingest_records(store, _facts("the billing service moved to eu-west", "backups run nightly at two",
                                              "the staging database is paused for the audit",
                                              "the search cluster now runs on arm64"), embedder=loading)
        assert report.written == 1 and loading.state == "ready"
        schema = store.partition("acme", "ops")
        assert schema is not None
        assert missing_count(store.cursor(), schema, "facts", loading.model_id) == 0
