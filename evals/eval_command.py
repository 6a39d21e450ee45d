"""`recallfs eval` itself: its flags checked, one set or every set run, the report printed."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from recallfs.evals import baseline as baseline_mod
from recallfs.evals import datasets
from recallfs.evals.harness import evaluate
from recallfs.evals.questions import EvalError
from recallfs.evals.report_markdown import markdown, markdown_all
from recallfs.evals.variants import ablations
from recallfs.query.lake_location import is_lake, mask_secrets

ALL_SETS = ("locomo", "demo", "realmem", "madial", "mtbenchplus")  # what --dataset all runs, in order


def _cli_problem(args: argparse.Namespace) -> str | None:
    for name, value in (("--limit", args.limit), ("--every", args.every), ("--personas", args.personas)):
        if value is not None and value < 1:
            return f"{name} must be at least 1"
    if args.personas is not None and args.dataset != "realmem":
        return "--personas is for --dataset realmem"
    if args.store and is_lake(args.store):  # eval builds its own store from the dataset, one file per set
        return (f"--store {mask_secrets(args.store)}: eval builds its own single-file store from the dataset, so "
                "--store names a file path; to measure a lake's memories, `recallfs migrate` it to a file")
    if args.dataset == "all" and (args.write_baseline or args.store or args.data):
        return "--dataset all runs every set on its own data and store: leave out --write-baseline, --store, --data"
    if args.write_baseline:
        return baseline_mod.section_problem(args.write_baseline, args.dataset, args.every, args.limit,
                                            bool(args.ablate), args.personas)
    return None


def _run_one(dataset: str, args: argparse.Namespace) -> dict[str, Any]:
    subset_of = baseline_mod.SECTION_SUBSET.get(args.write_baseline or "", {})
    return evaluate(dataset, data=args.data, store=Path(args.store) if args.store else None,
                    every=subset_of.get("every", args.every), limit=args.limit,
                    personas=subset_of.get("personas", args.personas),
                    arms=[args.arm] if args.arm else None, ablation=ablations() if args.ablate else None)


def _run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Every set in turn; a set whose data is missing here is reported so, not an error."""
    sets: dict[str, Any] = {}
    for dataset in ALL_SETS:
        try:
            sets[dataset] = _run_one(dataset, args)
        except (EvalError, datasets.DatasetError) as exc:
            sets[dataset] = {"dataset": dataset, "available": False, "reason": str(exc)}
    return {"dataset": "all", "sets": sets}



def run_cli(args: argparse.Namespace) -> int:
    """`recallfs eval`: prints the report as JSON (or markdown); 0 on success, 1 on an error."""
    problem = _cli_problem(args)
    if problem:
        print(f"recallfs eval: {problem}", file=sys.stderr)
        return 1
    try:
        report = _run_all(args) if args.dataset == "all" else _run_one(args.dataset, args)
    except (EvalError, datasets.DatasetError) as exc:
        print(f"recallfs eval: {exc}", file=sys.stderr)
        return 1
    if args.write_baseline:
        path = baseline_mod.write_section(args.write_baseline, report)
        print(f"recallfs eval: wrote the {args.write_baseline!r} figures to {path}", file=sys.stderr)
    if args.format == "markdown":
        sys.stdout.write(markdown_all(report) if args.dataset == "all" else markdown(report))
    else:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    return 0
