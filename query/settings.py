"""Every setting in one table: name, default, help. Each can be set as RECALLFS_<NAME>.

The README documents all of them; a test fails when one is missing there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallfs.ranking.provenance import DEFAULT_WEIGHTS, RANK_WEIGHTS, format_weights, parse_weights
from recallfs.ranking.stage_config import StageConfig

_STAGES = StageConfig()  # the shipped stage defaults: the settings' defaults are its fields


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    default: Any
    help: str

    @property
    def env(self) -> str:
        return "RECALLFS_" + self.name.upper()

    def coerce(self, raw: str) -> Any:
        kind = type(self.default)
        if kind is bool:
            low = raw.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"{self.env}={raw!r}: expected true or false")
        if kind in (int, float):
            try:
                return kind(raw)
            except ValueError:
                raise ValueError(f"{self.env}={raw!r}: expected a number") from None
        return raw


def default_store() -> str:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "recallfs" / "store.duckdb")


SETTINGS: tuple[Setting, ...] = (
    Setting("store", "", "path of the DuckDB store (default ~/.local/share/recallfs/store.duckdb)"),
    Setting("workspace", "default/default", "workspace ORG/WS that commands act on"),
    Setting("agent", "default", "agent name: author of ingested memories and reader of recall"),
    Setting("model", "", "sentence-transformers model directory (default: the packaged MiniLM-L6)"),
    Setting("semantic", True, "run the semantic arm; false reports degraded: off"),
    Setting("device", "auto", "embedding device: auto, cpu or cuda"),
    Setting("embed_timeout_ms", 2000, "time budget for embedding one query before recall answers lexically"),
    Setting("warm_timeout_ms", 0, "how long a CLI recall waits for the model to load (0: until loaded, at most "
            "model_load_timeout_s)"),
    Setting("model_load_timeout_s", 120.0, "the longest any command waits for the embedding model to load; "
            "past it recall answers lexically (warming), ingest stores rows without vectors, and the mount's "
            "health says the model is stuck"),
    Setting("k", 10, "hits per recall page"),
    Setting("fusion", "calibrated", "how fused recall combines its arms: calibrated (weighted sum of "
            "calibrated arm scores) or rrf (reciprocal rank fusion)"),
    Setting("rrf_k", 60, "the k constant of reciprocal rank fusion (fusion=rrf)"),
    Setting("candidates", 100, "candidates each arm contributes per table"),
    Setting("query_timeout_ms", 5000, "time limit for one DuckDB query"),
    Setting("max_rows", 5000, "row cap for one browse listing; larger listings say truncated"),
    Setting("recall_ttl_s", 5, "seconds the kernel may cache a recall directory"),
    Setting("log_level", "info", "daemon log level: debug, info, warning, error"),
    # Ranking: fusion weights and the shaping stages (ranking/pipeline.py StageConfig; the README's
    # ranking section has the ablation behind each default).
    Setting("weights", "default", "provenance weights, NAME=NUMBER,... over tables, arms or arm:table lists "
            "(unnamed ones count 1; replaces the defaults); `equal`: all 1; `default`: "
            f"{format_weights(DEFAULT_WEIGHTS)} for calibrated fusion, {format_weights(RANK_WEIGHTS)} for rank "
            "fusion and single arms"),
    Setting("dedup", _STAGES.dedup, "identity dedup: one hit per memory however many arms found it"),
    Setting("question_weight", _STAGES.question_weight, "score x this for a turn that only asks (ends in "
            "'?'; 1: off)"),
    Setting("session_weight", _STAGES.session_weight, "session evidence: a hit gains this x the best score "
            "among hits of its session (0: off)"),
    Setting("rerank", _STAGES.rerank, "rerank by the cosine of the query and the stored embeddings"),
    Setting("rerank_mix", _STAGES.rerank_mix, "weight of the cosine in the reranked score (0..1)"),
    Setting("rerank_budget_ms", _STAGES.rerank_budget_ms,
            "time budget of the reranker; past it the fused order is kept"),
    Setting("collapse", _STAGES.collapse, "collapse near-duplicates to the copy with the best provenance"),
    Setting("collapse_threshold", _STAGES.collapse_threshold,
            "cosine at or above which two hits may be near-duplicates"),
    Setting("recency", _STAGES.recency, "recency dampening: off, auto (on for temporal intent or recent:) or on"),
    Setting("half_life_days", _STAGES.half_life_days, "recency half-life in days"),
    Setting("mmr", _STAGES.mmr, "with budget:N, choose hits by MMR diversity (false: by score only)"),
    Setting("mmr_lambda", _STAGES.mmr_lambda, "MMR balance of relevance (1) against novelty (0)"),
    Setting("min_score", _STAGES.min_score, "drop hits whose score is below this (0..1; 0 keeps all)"),
    Setting("tag_bonus", _STAGES.tag_bonus, "score x (1 + this) when a query word names the hit's tag (0: off)"),
    Setting("kind_bonus", _STAGES.kind_bonus, "score x (1 + this) when a query word names the hit's kind (0: off)"),
    Setting("entity_first", _STAGES.entity_first, "a query that names an entity exactly shows its card first"),
)
# The settings that become StageConfig fields, by the same names.
STAGE_SETTINGS = ("dedup", "question_weight", "session_weight", "rerank", "rerank_mix", "rerank_budget_ms", "collapse",
                  "collapse_threshold", "recency", "half_life_days", "mmr", "mmr_lambda", "min_score", "tag_bonus",
                  "kind_bonus", "entity_first")

_BY_NAME = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    return _BY_NAME[name]


def resolve(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Defaults, then RECALLFS_* environment, then explicit overrides (CLI flags) that are not None."""
    env = os.environ if env is None else env
    out: dict[str, Any] = {}
    for s in SETTINGS:
        value = s.default
        if s.env in env and env[s.env] != "":
            value = s.coerce(env[s.env])
        out[s.name] = value
    for name, value in (overrides or {}).items():
        if value is not None:
            if name not in _BY_NAME:
                raise KeyError(f"unknown setting {name!r}")
            out[name] = value
    if not out["store"]:
        out["store"] = default_store()
    return out


def weights_from(text: str) -> dict[str, float] | None:
    """The `weights` setting's text as a fusion weights mapping ({} is equal weights, None the defaults
    of whichever fusion runs)."""
    if text.strip().lower() == "default":
        return None
    if text.strip().lower() == "equal":
        return {}
    try:
        weights = parse_weights(text)
    except ValueError as exc:
        raise ValueError(f"{setting('weights').env}: {exc}") from None
    if not weights:
        raise ValueError(f"{setting('weights').env} is empty: give NAME=NUMBER pairs, `equal` or `default`")
    return weights


def ranking_kwargs(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The recall() keywords the settings decide: fusion and its weights, RRF k, candidates, the stages.

    The CLI, the mount's recall/ directories and its control socket all call recall() with these, so
    one setting means the same everywhere. Raises ValueError naming the variable when a value is bad."""
    try:
        stages = StageConfig(**{name: cfg[name] for name in STAGE_SETTINGS})
    except ValueError as exc:
        raise ValueError(f"ranking settings (RECALLFS_*): {exc}") from None
    if int(cfg["rrf_k"]) < 1 or int(cfg["candidates"]) < 1:
        raise ValueError("RECALLFS_RRF_K and RECALLFS_CANDIDATES must be at least 1")
    fusion = str(cfg.get("fusion", "calibrated")).strip().lower()
    if fusion not in ("calibrated", "rrf"):
        raise ValueError(f"RECALLFS_FUSION must be calibrated or rrf, not {cfg.get('fusion')!r}")
    return {"weights": weights_from(str(cfg["weights"])), "stages": stages, "fusion": fusion,
            "rrf_k": int(cfg["rrf_k"]), "candidates": int(cfg["candidates"])}


def markdown_table() -> str:
    """The README's configuration table (`python -m recallfs.query.settings` prints it)."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for s in SETTINGS:
        default = "" if s.default == "" else str(s.default).lower() if isinstance(s.default, bool) else s.default
        rows.append(f"| `{s.env}` | `{default}` | {s.help} |" if default != "" else f"| `{s.env}` | | {s.help} |")
    return "\n".join(rows)


def update_readme(readme: Path) -> None:
    text = readme.read_text()
    start, end = "<!-- settings-table -->", "<!-- /settings-table -->"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{markdown_table()}\n{end}{tail}")


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:
        update_readme(Path(sys.argv[1]))
    else:
        print(markdown_table())
