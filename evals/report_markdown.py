"""A report as markdown tables (for the README)."""

from __future__ import annotations

from typing import Any

from recallfs.evals import metrics
from recallfs.evals.scoring import ALL_TABLES


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown(report: dict[str, Any]) -> str:
    """The report's figures as markdown tables (for the README)."""
    lines: list[str] = []
    if "arms" in report:
        for arm, res in report["arms"].items():
            if not res.get("available"):
                lines.append(f"**{arm}**: unavailable ({res.get('reason')})\n")
                continue
            lines.append(f"**{arm}** ({res['questions']} questions, {res['ms_per_query']} ms/query)\n")
            if "currentness" in res:
                figs = res["currentness"][ALL_TABLES]
                lines.append(", ".join(f"{m} {figs[m]:.3f}" for m in metrics.CURRENTNESS_METRICS) + "\n")
            lines.append("| level | scope | R@1 | R@5 | R@10 | MRR | nDCG@10 |")
            lines.append("|---|---|---|---|---|---|---|")
            for level in ("turn", "session", "memory", "source"):
                for scope, figs in (res.get(level) or {}).items():
                    if figs is None:
                        continue
                    lines.append(f"| {level} | {scope} | " + " | ".join(_fmt(figs[m]) for m in metrics.METRICS) + " |")
            lines.append("")
    if "ablation" in report:
        levels = [lvl for lvl in ("turn", "session", "memory", "source") if report["ablation"]["rows"]
                  and lvl in report["ablation"]["rows"][0]]
        head = " | ".join(f"{lvl} {m}" for lvl in levels for m in ("R@5", "R@10", "MRR", "nDCG@10"))
        current = bool(report["ablation"]["rows"]) and "currentness" in report["ablation"]["rows"][0]
        extra = " | current@1 | stale above current" if current else ""
        lines.append(f"| variant | {head}{extra} |")
        lines.append("|---|" + "---|" * (4 * len(levels) + (2 if current else 0)))
        for row in report["ablation"]["rows"]:
            figs = " | ".join(_fmt(row[lvl][m]) for lvl in levels for m in ("r@5", "r@10", "mrr", "ndcg@10"))
            if "currentness" in row:
                figs += " | " + " | ".join(_fmt(row["currentness"][m]) for m in metrics.CURRENTNESS_METRICS)
            lines.append(f"| {row['variant']} | {figs} |")
        for s in report["ablation"]["skipped"]:
            lines.append(f"\nskipped: {s['variant']}: {s['reason']}")
    return "\n".join(lines) + "\n"



def markdown_all(report: dict[str, Any]) -> str:
    """Every set's ranker at its unit in one table (evals/summary.py), then each set's own tables."""
    from recallfs.evals.summary import table

    parts = [table(report["sets"])]
    for name, sub in report["sets"].items():
        body = markdown(sub) if sub.get("available", True) else f"unavailable: {sub['reason']}\n"
        parts.append(f"### {name}\n\n{body}")
    return "\n".join(parts)

