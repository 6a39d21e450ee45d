"""Importers turn a source file into validated MemoryRecords, or fail with FILE:LINE: reason."""

from recallfs.query.importers.jsonl import read_jsonl
from recallfs.query.importers.locomo import read_locomo

IMPORTERS = {"jsonl": read_jsonl, "locomo": read_locomo}

__all__ = ["IMPORTERS", "read_jsonl", "read_locomo"]
