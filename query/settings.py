"""Every setting in one table: name, default, help. Each can be set as RECALLFS_<NAME>.

The README documents all of them; a test fails when one is missing there.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from recallfs.query.query_syntax import MAX_K
from recallfs.ranking.provenance import (
    DEFAULT_WEIGHTS,
    RANK_WEIGHTS,
    SINGLE_ARM_WEIGHTS,
    format_weights,
    parse_weights,
)
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
            raise SettingsError(f"{self.env}={raw!r}: expected true or false")
        if kind in (int, float):
            try:
                value = kind(raw)
            except ValueError:
                raise SettingsError(f"{self.env}={raw!r}: expected a number") from None
            return self.checked(value, raw)
        return raw

    def checked(self, value: float, raw: object) -> Any:
        """`value` if it is finite and within the setting's range (`RANGES`), else SettingsError."""
        if not math.isfinite(value):  # float() reads "inf" and "nan"; neither is a setting, nor JSON
            raise SettingsError(f"{self.env}={raw!r}: expected a finite number")
        lo, hi = RANGES.get(self.name, (None, None))
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            span = f"at least {lo}" if hi is None else f"from {lo} to {hi}"
            raise SettingsError(f"{self.env}={raw!r}: expected a number {span}")
        return value


_DAY_MS = 86_400_000
# setting -> (least, most) for the numbers a range bounds; the stage settings are checked by StageConfig,
# rrf_k and candidates also by Settings.ranking(). `k` is -k's and k:'s range.
RANGES: dict[str, tuple[float, float | None]] = {
    "k": (1, MAX_K), "rrf_k": (1, 1_000_000), "candidates": (1, 100_000),
    "embed_timeout_ms": (0, _DAY_MS), "warm_timeout_ms": (0, _DAY_MS), "query_timeout_ms": (1, _DAY_MS),
    "model_load_timeout_s": (0, 86_400), "serve_threads": (0, 1024), "max_rows": (1, 10_000_000),
    "recall_ttl_s": (0, 86_400), "recall_runs_held": (1, 10_000_000), "inbox_max_bytes": (1, 1 << 30),
}


def default_store() -> str:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "recallfs" / "store.duckdb")


def cache_home() -> Path:
    """recallfs's folder for what can be made again: $XDG_CACHE_HOME/recallfs (~/.cache when unset)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "recallfs"


def default_replica_dir() -> str:
    return str(cache_home() / "lakes")


class SettingsError(ValueError):
    """A setting whose value cannot be used; the message names its RECALLFS_* variable."""


def _s(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


_STAGE_HELP = {
    "standout_weak_z": "the semantic arm's standout bar (z) in calibrated fusion when the lexical arm matched "
                       "nothing; it rises linearly to 1.75 at a lexical best match of 0.3 of the query (1.75: fixed)",
    "dedup": "identity dedup: one hit per memory however many arms found it",
    "relevance_floor": "a hit whose arms matched the query less than this (calibrated 0..1, before shaping; "
                       "0: no floor) is a near-miss: a query with no hit above it says no memory matched",
    "floor_cosine": "a hit only the semantic arm found (no query word in it) must also be this near the "
                    "query, or it is a near-miss (cosine; 0: no such test)",
    "near_misses": "once some hit passes the relevance floor, the candidates below it follow the hits (in "
                   "their fused order, after every shaping stage) instead of being dropped (false: dropped)",
    "question_weight": "score x this for a turn that only asks (ends in '?'; 1: off)",
    "reply_weight": "the reply to a question turn among the best hits (the session's next turn, by another "
                    "speaker) scores at least this x the question (0: off)",
    "window_weight": "memories written in the span the question names (\"in May 2023\", \"last week\") "
                     "score x (1 + this) (0: off)",
    "context_weight": "a turn read with its session's nearest readable turns: it gains this x (the query's "
                      "cosine with their mean vector - 0.2) (0: off)",
    "session_weight": "session evidence: a hit gains this x its session's support (0: off)",
    "session_breadth": "a session's support: its best hit's score, with each of its next 4 hits closing this "
                       "x its score squared of what is left to 1 (noisy-OR; 0: the best hit alone)",
    "rerank": "rerank by the cosine of the query and the stored embeddings",
    "rerank_mix": "weight of the cosine in the reranked score (0..1)",
    "rerank_budget_ms": "time budget of the reranker; past it the fused order is kept",
    "collapse": "collapse near-duplicates to the copy with the best provenance",
    "collapse_threshold": "cosine at or above which two hits may be near-duplicates",
    "recency": "recency dampening: off, auto (on for temporal intent or recent:) or on",
    "half_life_days": "recency half-life in days",
    "currentness": "turns and summaries yield to the current fact that replaced the fact they were evidence of, "
                   "or that was recorded in their conversation",
    "recency_band": "recency reorders only the hits scoring at least this x the best score; the rest stay "
                    "below them (0: every hit)",
    "mmr": "with budget:N, choose hits by MMR diversity (false: by score only)",
    "mmr_lambda": "MMR balance of relevance (1) against novelty (0)",
    "min_score": "drop hits whose score is below this (0..1; 0 keeps all)",
    "tag_bonus": "score x (1 + this) when a query word names the hit's tag (0: off)",
    "kind_bonus": "score x (1 + this) when a query word names the hit's kind (0: off)",
    "entity_first": "a query that names an entity exactly shows its card first",
}


def _stage(name: str) -> Any:
    return _s(getattr(_STAGES, name), _STAGE_HELP[name])


@dataclass(frozen=True, slots=True)
class Ranking:
    """What the settings decide about ranking, checked once: recall()'s keywords (`recall_kwargs`)."""

    weights: dict[str, float] | None
    stages: StageConfig
    fusion: str
    rrf_k: int
    candidates: int

    def recall_kwargs(self) -> dict[str, Any]:
        return {"weights": self.weights, "stages": self.stages, "fusion": self.fusion, "rrf_k": self.rrf_k,
                "candidates": self.candidates}


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting, typed. Built once (`resolve`) and passed down; the field's metadata is its help,
    and the fields in order are the README's configuration table."""

    store: str = _s("", "path of the DuckDB store (default ~/.local/share/recallfs/store.duckdb), or a shared "
                    "DuckLake store: ducklake:postgres:CONNINFO;data=DIR (README \"Many hosts\")")
    replica_dir: str = _s("", "where this host keeps its copy of a DuckLake store (default "
                          "~/.cache/recallfs/lakes); one directory per host")
    workspace: str = _s("default/default", "workspace ORG/WS that commands act on")
    agent: str = _s("default", "agent name: author of ingested memories and reader of recall")
    model: str = _s("", "sentence-transformers model directory (default: the packaged MiniLM-L6)")
    semantic: bool = _s(True, "run the semantic arm; false reports degraded: off")
    device: str = _s("auto", "embedding device: auto, cpu or cuda")
    query_precision: str = _s("float32", "precision of the mount's query embedding on CPU: float32 (through "
                              "ONNX Runtime), bfloat16 (a traced torch graph, query vectors within cosine "
                              "0.9999; moved a few eval questions; on an AVX512-BF16 CPU about as fast as "
                              "float32's ONNX path), or auto (bfloat16 where this CPU runs it at least 1.3x "
                              "faster than float32)")
    embed_precision: str = _s("float32", "precision of bulk embedding (ingest, reindex) on CPU: float32 (MKL's "
                              "or oneDNN's kernels, whichever the first large job measures faster) or "
                              "bfloat16 (about 1.7x the rows/s on a CPU with AMX; stored vectors within "
                              "cosine 0.9999 of float32's; moved a few eval questions)")
    embed_timeout_ms: int = _s(2000, "time budget for embedding one query before recall answers lexically")
    vector_search: str = _s("ann", "how the semantic arm searches a table of 20,000 vectors or more: ann "
                            "(inverted lists probed until they hold 4,000 of the caller's rows, 40 per hit; "
                            "a scope of 3,000 rows or fewer is searched exactly) or exact (every readable "
                            "vector)")
    warm_timeout_ms: int = _s(0, "how long a CLI recall waits for the model to load (0: until loaded, at most "
                              "model_load_timeout_s)")
    model_load_timeout_s: float = _s(120.0, "the longest any command waits for the embedding model to load; "
                                     "past it recall answers lexically (warming), ingest stores rows without "
                                     "vectors, and the mount's health says the model is stuck")
    k: int = _s(10, "hits per recall page")
    fusion: str = _s("calibrated", "how fused recall combines its arms: calibrated (weighted sum of "
                     "calibrated arm scores) or rrf (reciprocal rank fusion)")
    rrf_k: int = _s(60, "the k constant of reciprocal rank fusion (fusion=rrf)")
    candidates: int = _s(100, "candidates each arm contributes per table (fusion keeps as many)")
    query_timeout_ms: int = _s(5000, "time limit for one DuckDB query")
    serve_threads: int = _s(1, "DuckDB threads of a mount's store (0: one per core). Its queries are small: run "
                            "on the caller's thread, they leave the other cores to concurrent requests and the "
                            "query embedding (hybrid recall at 100k: 43 -> 36 ms on 2 cores)")
    max_rows: int = _s(5000, "row cap for one browse listing; larger listings say truncated")
    recall_ttl_s: int = _s(5, "seconds the kernel may cache a recall directory")
    recall_runs_held: int = _s(512, "recall directories (one per distinct query, with their files' bytes) the "
                               "kernel may keep cached before the mount asks it to drop those nothing uses "
                               "(without this the kernel keeps them until memory pressure: 6,000 distinct "
                               "queries held 190 MB in the daemon)")
    inbox_max_bytes: int = _s(1 << 20, "the largest file the mount's inbox/ takes (a longer write fails with "
                              "EFBIG)")
    log_level: str = _s("info", "daemon log level: debug, info, warning, error")
    # Ranking: fusion weights and the shaping stages (ranking/stage_config.py StageConfig; the README's
    # ranking section has the ablation behind each default).
    weights: str = _s("default", "provenance weights, NAME=NUMBER,... over tables, arms or arm:table lists "
                      "(unnamed ones count 1; replaces the defaults); `equal`: all 1; `default`: "
                      f"{format_weights(DEFAULT_WEIGHTS)} for calibrated fusion, {format_weights(RANK_WEIGHTS)} "
                      f"for rank fusion, {format_weights(SINGLE_ARM_WEIGHTS)} for a single arm")
    standout_weak_z: float = _stage("standout_weak_z")
    dedup: bool = _stage("dedup")
    relevance_floor: float = _stage("relevance_floor")
    floor_cosine: float = _stage("floor_cosine")
    near_misses: bool = _stage("near_misses")
    question_weight: float = _stage("question_weight")
    reply_weight: float = _stage("reply_weight")
    window_weight: float = _stage("window_weight")
    context_weight: float = _stage("context_weight")
    session_weight: float = _stage("session_weight")
    session_breadth: float = _stage("session_breadth")
    rerank: bool = _stage("rerank")
    rerank_mix: float = _stage("rerank_mix")
    rerank_budget_ms: float = _stage("rerank_budget_ms")
    collapse: bool = _stage("collapse")
    collapse_threshold: float = _stage("collapse_threshold")
    recency: str = _stage("recency")
    half_life_days: float = _stage("half_life_days")
    currentness: bool = _stage("currentness")
    recency_band: float = _stage("recency_band")
    mmr: bool = _stage("mmr")
    mmr_lambda: float = _stage("mmr_lambda")
    min_score: float = _stage("min_score")
    tag_bonus: float = _stage("tag_bonus")
    kind_bonus: float = _stage("kind_bonus")
    entity_first: bool = _stage("entity_first")

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def ranking(self) -> Ranking:
        """The ranking these settings describe. The CLI, the mount's recall/ directories and its control
        socket all rank with it, so one setting means the same everywhere. Raises SettingsError."""
        try:
            stages = StageConfig(**{name: getattr(self, name) for name in STAGE_SETTINGS})
        except ValueError as exc:
            raise SettingsError(f"ranking settings (RECALLFS_*): {exc}") from None
        if self.rrf_k < 1 or self.candidates < 1:
            raise SettingsError("RECALLFS_RRF_K and RECALLFS_CANDIDATES must be at least 1")
        fusion = self.fusion.strip().lower()
        if fusion not in FUSIONS:
            raise SettingsError(f"RECALLFS_FUSION must be calibrated or rrf, not {self.fusion!r}")
        return Ranking(weights_from(self.weights), stages, fusion, self.rrf_k, self.candidates)


FUSIONS = ("calibrated", "rrf")
DEFAULTS = Settings()  # the defaults, for signatures that take a setting as a keyword
SETTINGS: tuple[Setting, ...] = tuple(
    Setting(f.name, f.default, f.metadata["help"]) for f in fields(Settings))
# The settings that become StageConfig fields, by the same names.
STAGE_SETTINGS = tuple(f.name for f in fields(StageConfig))

_BY_NAME = {s.name: s for s in SETTINGS}


def setting(name: str) -> Setting:
    return _BY_NAME[name]


def resolve(overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Defaults, then RECALLFS_* environment, then explicit overrides (CLI flags) that are not None.
    Raises SettingsError for a value that is not of the setting's type."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for s in SETTINGS:
        if s.env in env and env[s.env] != "":
            values[s.name] = s.coerce(env[s.env])
    for name, value in (overrides or {}).items():
        if value is not None:
            if name not in _BY_NAME:
                raise KeyError(f"unknown setting {name!r}")
            values[name] = value
    if not values.get("store"):
        values["store"] = default_store()
    if not values.get("replica_dir"):
        values["replica_dir"] = default_replica_dir()
    return Settings(**values)


def chosen(name: str, override: object = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether the user chose this setting (its flag, or its RECALLFS_* variable) rather than its default."""
    env = os.environ if env is None else env
    return override is not None or bool(env.get(setting(name).env))


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
        raise SettingsError(f"{setting('weights').env}: {exc}") from None
    if not weights:
        raise SettingsError(f"{setting('weights').env} is empty: give NAME=NUMBER pairs, `equal` or `default`")
    return weights


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
