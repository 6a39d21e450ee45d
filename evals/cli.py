"""`recallfs eval`, contributed to the CLI through the `recallfs.commands` entry point (pyproject.toml):
the CLI finds it without importing evals, and evals imports nothing of the mount layer."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="run the recall-quality harness")
    p.add_argument("--dataset", default="locomo",
                   choices=["locomo", "demo", "currentness", "realmem", "madial", "mtbenchplus", "all"],
                   help="all: locomo, demo, realmem, madial and mtbenchplus in turn")
    p.add_argument("--data", type=Path, help="dataset file (default ../shared/data/locomo10.json, or the "
                   "bundled demo_memory.jsonl); for realmem, madial and mtbenchplus the memory_dev directory "
                   "(default ../shared/data/memory_dev)")
    p.add_argument("--arm", choices=["lexical", "semantic", "fused", "plain"],
                   help="one arm, or plain: the plain BM25 / cosine / RRF reference (default: all, side by side)")
    p.add_argument("--personas", type=int, help="realmem: only the first N personas (a smaller store)")
    p.add_argument("--limit", type=int, help="only the first N questions of each conversation (a fixed subset)")
    p.add_argument("--every", type=int, help="only every Nth question of each conversation (a fixed subset)")
    p.add_argument("--store", help="reuse or build the eval store here (default: a cache under "
                   "~/.cache/recallfs/eval keyed by data and code)")
    p.add_argument("--ablate", action="store_true", help="one row per pipeline stage toggled (evals/variants.py)")
    p.add_argument("--format", default="json", choices=["json", "markdown"], help="report format (default json)")
    p.add_argument("--write-baseline",
                   choices=["ci", "full", "demo", "currentness", "realmem", "realmem_ci", "madial", "mtbenchplus"],
                   help="run that baseline's question set and write its figures to evals/baseline.json")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from recallfs.evals.eval_command import run_cli

    return run_cli(args)
