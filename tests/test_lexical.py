"""The lexical arm on a real DuckDB store: hostile queries never crash and give sensible results."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallfs.query.ingest_file import ingest_records
from recallfs.query.lexical import MAX_TERMS, query_terms
from recallfs.query.recall import recall
from recallfs.query.records import parse_record
from recallfs.query.stopwords import STOPWORDS
from recallfs.query.store import Store
from recallfs.scope.principal import Principal

from conftest import fact, turn

ME = Principal("acme", "proj", "tester")
RECORDS = [
    fact("f1", "Run the test suite with cargo nextest run --profile ci", kind="procedure", tags=["tests"]),
    fact("f2", "Hello world is the first example in the docs", tags=["docs"]),
    fact("f3", "The café on Rue Saint-Honoré hosts the team offsite"),
    fact("f4", "Привет: the Russian locale uses Cyrillic strings"),
    fact("f5", "東京タワーで会議をしました"),
    fact("f6", "Use the C++ API for 100% of bindings; C# is out of scope"),
    fact("f7", "ＰＲＯＭＥＴＨＥＵＳ staging runs on ２０２６ hardware; the ﬁrewall is set"),
    turn("s1", 0, "maya", "Where did we put the release checklist?"),
    turn("s1", 1, "atlas", "It is in docs/release.md, next to the changelog."),
]


def _records(objs):
    return [parse_record(o, org="acme", workspace="proj", agent="tester") for o in objs]


@pytest.fixture
def store(store_path):
    with Store(store_path) as s:
        ingest_records(s, _records(RECORDS), embedder=None)
        yield s


def _index_fold(text):
    """The FTS index's folding (lower=1, strip_accents=1) as the lexical arm wrote it before it shared
    ranking/text.fold, which also makes whitespace one space."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _index_terms(text):
    seen = {}
    for token in re.split(r"[^\w]+|_+", _index_fold(text)):
        if token and token not in STOPWORDS and len(seen) < MAX_TERMS:
            seen.setdefault(token, None)
    return list(seen)


# Whitespace of every kind (NBSP and the ideographic space decompose to a space), accents, ligatures,
# full-width forms, underscores and the separators str.split() knows but \w does not.
_TRICKY = "a\u00a0b\u3000c\t\n\x1c\u2028 _x__y é\u0301 ﬁ ＡＢ ǅ İ ß ① ½ Ω Å 東京 привет".split(" ")


@settings(max_examples=2000, deadline=None, derandomize=True, database=None)
@given(st.lists(st.one_of(st.sampled_from(_TRICKY), st.text(max_size=6)), max_size=12).map("".join))
def test_query_terms_fold_as_the_index_does(text):
    assert query_terms(text) == _index_terms(text)


def ids(result):
    return [h.row["source_id"] for h in result.hits]


@pytest.mark.parametrize(("query", "expected_top"), [
    ("nextest", "f1"),
    ("running tests", "f1"),  # stemming: running -> run, tests -> test
    ("hello", "f2"),  # not a stop word here, unlike DuckDB's default english list
    ("cafe", "f3"),  # accents folded
    ("café", "f3"),
    ("HONORÉ", "f3"),
    ("привет", "f4"),
    ("東京タワー", "f5"),
    ("東京", "f5"),  # no spaces in the script: substring fallback
    ("release checklist", "s1#0"),
    # compatibility forms (full-width letters and digits, a ligature) are indexed as their plain letters
    # (query/search_forms.py); found 2026-12-07: not even the identical full-width query found f7
    ("prometheus", "f7"),
    ("ＰＲＯＭＥＴＨＥＵＳ", "f7"),
    ("ｐｒｏｍｅｔｈｅｕｓ", "f7"),
    ("firewall", "f7"),
    ("2026 hardware", "f7"),
])
def test_sensible_results(store, query, expected_top):
    result = recall(store, ME, query, arm="lexical")
    assert ids(result)[:1] == [expected_top], (query, ids(result))


HOSTILE = [
    "the of and",
    "???!!! ... ,,,",
    '"unterminated',
    "'; DROP TABLE facts; --",
    "SELECT * FROM main.partitions WHERE 1=1 OR '1'='1'",
    "nextest AND (ci OR profile*) -cargo ~ ^ : \" '",
    "match_bm25(rid, 'x') \\ % _ [",
    "x" * 10_000,
    ("release " * 1500).strip(),
    "\x00\x01\x7f",
    "🙂🚀 emoji only",
    "",
    "   ",
]


@pytest.mark.parametrize("query", HOSTILE, ids=[repr(q[:30]) for q in HOSTILE])
def test_hostile_queries_never_crash(store, query):
    result = recall(store, ME, query, arm="lexical")
    assert result.total_candidates >= len(result.hits)
    payload = result.as_json()
    json.dumps(payload)  # always serialisable
    # the store is intact afterwards
    assert store.table_counts(store.schema_for(ME))["facts"] == 7


def test_stopword_only_query_says_why(store):
    result = recall(store, ME, "the of and", arm="lexical")
    assert result.hits == []
    assert any("no searchable words" in n for n in result.notes)


def test_sql_looking_query_is_text(store):
    result = recall(store, ME, "DROP TABLE facts", arm="lexical")
    assert result.hits == [] or all("drop" in h.row["content"].lower() for h in result.hits)


def test_long_query_is_cut_to_terms():
    assert len(query_terms(" ".join(f"word{i}" for i in range(5000)))) == 32


def test_rows_not_yet_indexed_are_found(store):
    # Write without rebuilding the FTS index: the new row sits above the index watermark.
    ingest_records(store, _records([fact("f9", "zebrafish telemetry was removed in v2")]), refresh=False,
                   embedder=None)
    assert ids(recall(store, ME, "zebrafish", arm="lexical")) == ["f9"]
    # Indexed rows still rank alongside.
    assert "f1" in ids(recall(store, ME, "nextest zebrafish", arm="lexical"))


def test_no_match_is_stated(store):
    result = recall(store, ME, "kubernetes helm chart", arm="lexical")
    assert result.hits == [] and "no memory matched the query" in result.notes


def test_other_workspace_sees_nothing(store):
    other = Principal("acme", "elsewhere", "tester")
    result = recall(store, other, "nextest", arm="lexical")
    assert result.hits == [] and result.total_candidates == 0


def test_pagination(store):
    first = recall(store, ME, "the docs release cargo test hello", arm="lexical", k=2)
    second = recall(store, ME, "the docs release cargo test hello", arm="lexical", k=2, offset=2)
    assert first.has_more and [h.rank for h in second.hits] == [3, 4][: len(second.hits)]
    assert not set(ids(first)) & set(ids(second))


def _scoped(store, table):
    from recallfs.query.gate import scope_clause
    from recallfs.query.query_syntax import RecallOptions

    schema = store.schema_for(ME)
    where, params = scope_clause(ME, schema, RecallOptions())
    return schema, where, params


def test_calibrated_scores_keep_the_bm25_order_and_lie_in_0_1(store):
    from recallfs.query.lexical import search, search_calibrated

    schema, where, params = _scoped(store, "facts")
    terms = query_terms("cargo nextest docs hello")
    scored = search_calibrated(store, schema, "facts", terms, where=where, params=params, limit=10, corpus=None)
    assert list(scored) == search(store, schema, "facts", terms, where=where, params=params, limit=10, corpus=None)
    assert scored and all(0.0 < s <= 1.0 for s in scored.values())
    assert list(scored.values()) == sorted(scored.values(), reverse=True)


def test_calibrated_score_grows_with_the_share_of_the_query_matched(store):
    from recallfs.query.lexical import search_calibrated

    schema, where, params = _scoped(store, "facts")
    f1 = store.cursor().execute(f"SELECT rid FROM {schema}.facts WHERE source_id = 'f1'").fetchone()[0]
    one = search_calibrated(store, schema, "facts", query_terms("nextest"), where=where, params=params, limit=5,
                            corpus=None)
    two = search_calibrated(store, schema, "facts", query_terms("nextest offsite"), where=where, params=params,
                            limit=5, corpus=None)
    # f1 matches all of "nextest" but only half of "nextest offsite"
    assert one[f1] > two[f1]


def test_score_indexed_scores_other_arms_rows(store):
    from recallfs.query.lexical import score_indexed, search_calibrated

    schema, where, params = _scoped(store, "facts")
    terms = query_terms("cargo nextest")
    scored = search_calibrated(store, schema, "facts", terms, where=where, params=params, limit=10, corpus=None)
    rows = [rid for (rid,) in store.cursor().execute(f"SELECT rid FROM {schema}.facts").fetchall()]
    again = score_indexed(store, schema, "facts", terms, rows, corpus=None)
    assert again == pytest.approx(scored)  # rows matching no term are left out
    assert score_indexed(store, schema, "facts", terms, [], corpus=None) == {}
    assert score_indexed(store, schema, "facts", [], rows, corpus=None) == {}


def test_fresh_rows_score_the_share_of_terms_they_contain(store):
    from recallfs.query.lexical import search_calibrated

    ingest_records(store, _records([fact("f9", "zebrafish telemetry was removed in v2")]), refresh=False,
                   embedder=None)
    schema, where, params = _scoped(store, "facts")
    scored = search_calibrated(store, schema, "facts", query_terms("zebrafish quokka"), where=where,
                               params=params, limit=5, corpus=None)
    assert list(scored.values()) == [pytest.approx(0.5)]


def test_degraded_fusion_ranks_across_tables_by_how_much_of_the_query_matched(store):
    # No semantic arm: calibrated fusion still orders the lexical hits of different tables by the share
    # of the query each matched (the turns have two of its words, the fact only "docs"), where rank
    # fusion puts each table's first hit level and lets the fact's provenance weight decide.
    calibrated = recall(store, ME, "release checklist docs", arm="fused")
    ranked = recall(store, ME, "release checklist docs", arm="fused", fusion="rrf")
    assert calibrated.degraded and ranked.degraded
    assert set(ids(calibrated)[:2]) == {"s1#0", "s1#1"} and ids(calibrated)[2] == "f2"
    assert ids(ranked)[:2] == ["f2", "s1#0"]


def test_question_turns_yield_to_answers_in_calibrated_fusion_only(store):
    # s1#0 asks "Where did we put the release checklist?", s1#1 answers "It is in docs/release.md, ...".
    calibrated = recall(store, ME, "release checklist docs", arm="fused")
    assert ids(calibrated)[:2] == ["s1#1", "s1#0"]
    assert calibrated.stages["questions"] == "question turns x0.8"
    single = recall(store, ME, "release checklist", arm="lexical")
    assert ids(single)[0] == "s1#0" and single.stages["questions"].startswith("off (rank-fused scores")


def test_unknown_fusion_is_refused(store):
    with pytest.raises(ValueError, match="fusion must be one of"):
        recall(store, ME, "docs", fusion="borda")


# Queries the per-term stem cache must cut exactly as DuckDB cuts the whole query text.
STEM_QUERIES = [
    "Where did we put the release checklist?",
    "running runs ran runner's",
    "naïve café résumé Straße ŒUVRE",
    "e-mail foo_bar x86-64 3.14 v1.2.3",
    "Ünïcödé ﬁle ǅemal a\u0301b\u0327c",
    "日本語のテキスト検索 東京タワー",
    "ΑΘΗΝΑ αθηνα İstanbul ıi Привет",
    "don't won't it's O'Reilly",
    "x" * 300,
    "cargo nextest run --profile ci; cargo",
]


@pytest.mark.parametrize("query", STEM_QUERIES)
def test_stems_per_term_are_the_stems_of_the_whole_query(store, query):
    from recallfs.query.bm25_memory import fts_schema
    from recallfs.query.bm25_query import index_stems

    cur = store.cursor()
    schema = store.schema_for(ME)
    fts = fts_schema(schema, "facts")
    terms = query_terms(query)
    whole = cur.execute(f"SELECT DISTINCT stem(unnest({fts}.tokenize(?)), 'porter')", [" ".join(terms)]).fetchall()
    assert index_stems(cur, fts, terms) == sorted(str(r[0]) for r in whole if r[0])
    assert index_stems(cur, fts, terms) == index_stems(cur, fts, list(reversed(terms)))  # cached, any order


def test_a_known_word_the_caller_cannot_read_sends_no_substring_scan(store):
    """BM25 finds "fisher" only in scout's private fact; the tester's "kingfisher" holds it inside a longer
    word. Every query word being a term of the index, nothing is scanned by substring (at 300k rows such a
    scan took ~0.5 s per table), and no memory matches. A word the index never saw still is scanned."""
    ingest_records(store, [parse_record(fact("p1", "A fisher mended nets on the pier", visibility="private"),
                                        org="acme", workspace="proj", agent="scout"),
                           *_records([fact("k1", "The kingfisher nests by the canal")])], embedder=None)
    assert recall(store, ME, "fisher", arm="lexical").hits == []
    assert [h.row["source_id"] for h in recall(store, ME, "東京タワー", arm="lexical").hits] == ["f5"]


@pytest.mark.parametrize(("query", "expected"), [
    ("est", []),  # inside "test" and "nextest": another word, not a match
    ("ext", []),  # inside "nextest" and "next"
    ("ello", []),  # inside "hello"
    ("ивет", []),  # inside "привет"
    ("hel", ["f2"]),  # where "hello" starts: a word-start match, as "postgres" finds "postgresql"
    ("offs", ["f3"]),  # where "offsite" starts
    ("прив", ["f4"]),
    ("cafe ello", ["f3"]),  # one word matches by BM25: the other is not looked for at all
    ("東京", ["f5"]),  # a script without spaces: found inside the run of text
    ("会議", ["f5"]),
    ("タワー", ["f5"]),
])
def test_a_word_no_memory_holds_finds_only_memories_with_a_word_it_starts(store, query, expected):
    """A query word the index has never seen used to be looked for by substring in every row, in any
    script, and such a row scored as a full match: "tab" brought every fact about a database, at the top
    score. In a spaced script it now counts only where a word starts; in a script written without spaces
    anywhere, as before."""
    assert ids(recall(store, ME, query, arm="lexical"))[:len(expected) or None] == expected


def _substring_pass_before(con, table, terms, limit):
    """The substring pass as written before 2026-12-04 (one LIKE ... ESCAPE and one regex per term, the
    text folded for each): the reference the faster form must agree with."""
    from recallfs.ranking.text import unspaced

    text = "strip_accents(lower(m.search_text))"
    hits, args = [], []
    for t in terms:
        like = "%" + t.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        if unspaced(t):
            hits.append(f"CASE WHEN {text} LIKE ? ESCAPE '\\' THEN 1 ELSE 0 END")
            args.append(like)
        else:
            hits.append(f"CASE WHEN {text} LIKE ? ESCAPE '\\' AND regexp_matches({text}, ?) THEN 1 ELSE 0 END")
            args += [like, r"(?:^|[^\pL\pN])" + re.escape(t)]
    return con.execute(
        f"""SELECT rid, matched FROM (SELECT m.rid, ({" + ".join(hits)}) AS matched FROM scr.{table} m
            WHERE m.rid > ? AND m.rid % 7 <> 3) WHERE matched > 0 ORDER BY matched DESC, rid DESC LIMIT ?""",
        [*args, 0, limit]).fetchall()


_WORDS = ["postgresql", "jsonl", "database", "Café", "CAFE", "cafe\u0301s", "ＡＢ", "東京タワー", "привет", "ǅemal",
          "İstanbul", "straße", "noticed", "unit", "junit", "x_y", "a-b", "100%", "ﬁle", "Åsa"]
_TERMS = ["post", "postgres", "json", "tab", "cafe", "caf", "ab", "東京", "タワー", "прив", "ивет", "dzemal",
          "istanbul", "stra", "ice", "unit", "x", "y", "b", "100", "file", "asa", "zzz"]


_TABLES = iter(range(10**9))  # a table per example: the pass's matches are cached per table and generation


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join), min_size=1, max_size=25),
       st.lists(st.sampled_from(_TERMS), min_size=1, max_size=4, unique=True),
       st.integers(min_value=1, max_value=50))
def test_the_substring_pass_finds_what_it_found_before(scratch_store, texts, terms, limit):
    """The faster form (the text folded once, a row kept only when it holds some term, contains() for
    LIKE, the scope applied through the cached readable rows) returns the same rows, counts and order as
    the one it replaced, over accents, ligatures, full-width forms, unspaced scripts, word starts, a
    scope clause and the limit."""
    from recallfs.query.lexical import _search_fresh

    table = f"t{next(_TABLES)}"
    cur = scratch_store.cursor()
    cur.execute(f"CREATE TABLE scr.{table} (rid BIGINT, search_text VARCHAR)")
    cur.executemany(f"INSERT INTO scr.{table} VALUES (?, ?)", list(enumerate(texts, start=1)))
    expected = [(int(r), int(n)) for r, n in _substring_pass_before(cur, table, terms, limit)]
    assert _search_fresh(scratch_store, "scr", table, terms, 0, "m.rid % 7 <> ?", [3], limit) == expected
    # asked again (fused recall's second look): the cached matches, the same answer
    assert _search_fresh(scratch_store, "scr", table, terms, 0, "m.rid % 7 <> ?", [3], limit) == expected


@pytest.fixture(scope="module")
def scratch_store(tmp_path_factory):
    with Store(tmp_path_factory.mktemp("scratch") / "scratch.duckdb") as s:
        s.cursor().execute("CREATE SCHEMA scr")
        yield s


@pytest.mark.parametrize(("term", "expected"), [
    ("tab", False), ("привет", False), ("café", False), ("ａｂ", False), ("", False),
    ("東京", True), ("タワー", True), ("かな", True), ("서울", True), ("ภาษาไทย", True), ("ພາສາລາວ", True),
    ("ខ្មែរ", True), ("မြန်မာ", True), ("བོད", True), ("x東", True), ("𠀋", True),
])
def test_unspaced_scripts(term, expected):
    from recallfs.ranking.text import unspaced

    assert unspaced(term) is expected


def test_a_partition_written_before_the_fold_is_refolded_and_reindexed(store_path):
    """A store whose rows hold full-width text as written (partition v4): opening it for writing folds
    their search text and rebuilds the tables' indexes, so the words are found without a re-ingest."""
    with Store(store_path) as s:
        ingest_records(s, _records(RECORDS), embedder=None)
        schema = s.schema_for(ME)
        cur = s.cursor()
        cur.execute(f"UPDATE {schema}.facts SET search_text = content WHERE source_id = 'f7'")
        cur.execute("UPDATE main.partitions SET schema_version = 4")
        from recallfs.query.fts_freshness import rebuild_tables
        rebuild_tables(s, [(schema, "facts")])
        assert ids(recall(s, ME, "prometheus", arm="lexical")) == []  # as such a store answered
    with Store(store_path) as s:
        from recallfs.query.fts_freshness import repair_fts
        assert [(x.table, x.rows_behind) for x in repair_fts(s)] == [("facts", 7)]  # what an open for writing runs
        row = s.cursor().execute(f"SELECT search_text FROM {s.schema_for(ME)}.facts WHERE source_id = 'f7'").fetchone()
        assert row is not None and row[0].startswith("PROMETHEUS staging runs on 2026 hardware; the firewall")
        assert ids(recall(s, ME, "prometheus", arm="lexical"))[:1] == ["f7"]
        assert ids(recall(s, ME, "firewall", arm="lexical"))[:1] == ["f7"]
