"""The mount's path grammar and file names, from tables."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallfs.mount import names, paths
from recallfs.mount.inbox_state import rejected_name
from recallfs.mount.names import (
    NameTooLong,
    decode_query,
    decode_value,
    disambiguate,
    encode_value,
    fact_name,
    hit_name,
    parse_fact_name,
    parse_version_name,
    slug,
    turn_name,
    version_name,
)
from recallfs.mount.paths import Kind, candidates, resolve
from recallfs.mount.recall_files import hit_label

ROUTES = [
    ("", Kind.ROOT, {}),
    ("index.md", Kind.INDEX, {}),
    ("facts", Kind.FACTS, {}),
    ("facts/tests-use-nextest--f-1a2b.md", Kind.FACT, {"id": "f-1a2b"}),
    ("facts/a-b--id--with--dashes.md", Kind.FACT, {"id": "id--with--dashes"}),
    ("facts/by-kind", Kind.KINDS, {}),
    ("facts/by-kind/decision", Kind.KIND, {"kind_name": "decision"}),
    ("facts/by-kind/decision/x--f-1.md", Kind.FACT, {"kind_name": "decision", "id": "f-1"}),
    ("facts/by-tag", Kind.TAGS, {}),
    ("facts/by-tag/area\u2215ci", Kind.TAG, {"tag_name": "area\u2215ci"}),
    ("facts/by-tag/ci/x--f-1.md", Kind.FACT, {"tag_name": "ci", "id": "f-1"}),
    ("facts/_truncated.md", Kind.TRUNCATED, {}),
    ("facts/by-kind/decision/_truncated.md", Kind.TRUNCATED, {}),
    ("sessions", Kind.SESSIONS, {}),
    ("sessions/session_1", Kind.SESSION, {"session_name": "session_1"}),
    ("sessions/session_1/summary.md", Kind.SUMMARY, {"session_name": "session_1"}),
    ("sessions/session_1/transcript.md", Kind.TRANSCRIPT, {"session_name": "session_1"}),
    ("sessions/session_1/turns", Kind.TURNS, {"session_name": "session_1"}),
    ("sessions/s/turns/0003-caroline.md", Kind.TURN, {"session_name": "s", "turn_name": "0003-caroline.md",
                                                       "seq": 3}),
    ("sessions/s/turns/12345-bob--t-9.md", Kind.TURN, {"session_name": "s", "turn_name": "12345-bob--t-9.md",
                                                        "seq": 12345}),
    ("entities", Kind.ENTITIES, {}),
    ("entities/Caroline.md", Kind.ENTITY, {"entity_name": "Caroline.md"}),
    ("history", Kind.HISTORY, {}),
    ("history/f-1a2b", Kind.VERSIONS, {"id": "f-1a2b"}),
    ("history/f-1a2b/v1.md", Kind.VERSION, {"id": "f-1a2b", "version": 1}),
    ("history/f-1a2b/v12-turn.md", Kind.VERSION, {"id": "f-1a2b", "version": 12}),
    ("recall", Kind.RECALL, {}),
    ("recall/.results", Kind.RESULTS, {}),
    ("recall/how do I run tests", Kind.QUERY_LINK, {"query": "how do I run tests"}),
    ("recall/README.md", Kind.RECALL_README, {}),
    ("recall/README.md k:3", Kind.QUERY_LINK, {"query": "README.md k:3"}),
    ("recall/CI%2FCD k:5", Kind.QUERY_LINK, {"query": "CI/CD k:5"}),
    ("recall/CI\u2215CD", Kind.QUERY_LINK, {"query": "CI/CD"}),
    ("recall/.results/how do I run tests", Kind.QUERY, {"query": "how do I run tests"}),
    ("recall/.results/q/results.json", Kind.RESULTS_JSON, {"query": "q"}),
    ("recall/.results/q/00-entity-ci.md", Kind.HIT, {"query": "q", "rank": 0}),
    ("recall/.results/q/context.xml", Kind.CONTEXT_XML, {"query": "q"}),
    ("recall/.results/q/01-fact-tests-use-nextest.md", Kind.HIT, {"query": "q", "rank": 1}),
    ("recall/.results/q/102-turn-x.md", Kind.HIT, {"query": "q", "rank": 102}),
]

NOTHING = [
    "nope", "index.txt", "facts/readme.md", "facts/no-id.md", "facts/x--bad id.md", "facts/by-kind/d/readme.md",
    "sessions/s/notes.md", "sessions/s/turns/3-bob.md", "history/bad id", "history/f-1/v0.md",
    "history/f-1/1.md", "recall/.gitignore", "recall/.git", "recall/.results/.rgignore",
    "recall/.results/q/readme.md", "recall/.results/q/1-fact-x.md", "facts/.hidden--f-1.md",
    "sessions/.git", "index.md/child", "recall/q/extra",
]


@pytest.mark.parametrize(("path", "kind", "params"), ROUTES)
def test_route_table(path: str, kind: Kind, params: dict) -> None:
    match = resolve(tuple(path.split("/")) if path else ())
    assert match is not None
    assert match.kind is kind
    assert match.params == params


@pytest.mark.parametrize("path", NOTHING)
def test_names_outside_the_grammar(path: str) -> None:
    assert resolve(tuple(path.split("/"))) is None


def test_a_speaker_is_slugged_once() -> None:
    from recallfs.mount import names

    turn_name(1, "Speaker Seen Once")
    before = names._speaker_slug.cache_info().hits
    assert [turn_name(i, "Speaker Seen Once") for i in (2, 3)] == ["0002-speaker-seen-once.md",
                                                                    "0003-speaker-seen-once.md"]
    assert names._speaker_slug.cache_info().hits - before == 2


def test_every_route_starts_with_a_fixed_name() -> None:
    """What makes `candidates` exact: a route can only match a path that starts with its first name."""
    assert all(route.pattern[0] not in paths.PLACEHOLDERS for route in paths.ROUTES if route.pattern)


@pytest.mark.parametrize("path", [p for p, _, _ in ROUTES] + NOTHING)
def test_candidates_answer_as_every_route_would(path: str) -> None:
    parts = tuple(path.split("/")) if path else ()
    if parts and parts[-1] == paths.TRUNCATED_NAME:
        return  # answered before the routes, by the directory's route
    first = next((r for r in paths.ROUTES if paths._match_route(r, parts) is not None), None)
    assert (first.kind if first else None) == (m.kind if (m := resolve(parts)) else None)


@pytest.mark.parametrize("probe", [".gitignore", ".ignore", ".rgignore", ".git"])
def test_a_probe_in_a_walked_directory_tries_one_route(probe: str) -> None:
    """rg asks every directory for these (a cold walk of the 100k store: 400k lookups); the grammar has
    about 30 routes."""
    for parent in (("history", "f-1"), ("sessions", "s", "turns"), ("facts", "by-tag", "t")):
        assert len(candidates((*parent, probe))) <= 2  # facts/by-kind/<k>/ and by-tag/<t>/ share a head
        assert resolve((*parent, probe)) is None


@pytest.mark.parametrize("path", ["recall/" + "q" * 256, "recall/" + "é" * 128, "facts/" + "x" * 300 + "--f.md"])
def test_names_over_255_bytes(path: str) -> None:
    with pytest.raises(NameTooLong):
        resolve(tuple(path.split("/")))


def test_255_bytes_is_fine() -> None:
    assert resolve(("recall", "q" * 255)) is not None


@pytest.mark.parametrize(("text", "expected"), [
    ("Tests use nextest!", "tests-use-nextest"),
    ("  Ünïcode  ÇAFÉ  ", "unicode-cafe"),
    ("a--b__c", "a-b-c"),
    ("", "memory"),
    ("!!!", "memory"),
    ("one two three four five six seven eight nine ten eleven", "one-two-three-four-five-six-seven-eight-nine-ten"),
    ("x" * 80, "x" * 48),
    ("日本語 テキスト", "日本語-テキスト"),
    # marks are part of the letter outside Latin: で is not て, a Hangul syllable is not its jamo
    ("データベースで", "データベースで"),
    ("ﾃﾞｰﾀ", "データ"),
    ("한국어 메모", "한국어-메모"),
    ("हिन्दी भाषा", "हिन्दी-भाषा"),
    ("ﬁle №5", "file-no5"),
    # symbols only: named by their Unicode names, not by the fallback
    ("👍", "thumbs-up-sign"),
    ("✅ 🎉", "white-heavy-check-mark-party-popper"),
])
def test_slug(text: str, expected: str) -> None:
    assert slug(text) == expected
    assert "--" not in slug(text)


def _slug_by_the_definition(text: str, max_chars: int = 48, fallback: str = "memory") -> str:
    """slug() as first written: every word of the NFKC text, then the first that fit."""
    def words(s: str) -> list[str]:
        out, current = [], ""
        for ch in unicodedata.normalize("NFKC", s).lower():
            if ch.isalnum() or (current and unicodedata.category(ch).startswith("M")):
                current += names._fold(ch)
            elif current:
                out.append(current)
                current = ""
        return [*out, current] if current else out
    out = ""
    for word in words(text) or words(names.symbol_names(text)):
        candidate = f"{out}-{word}" if out else word
        if len(candidate) > max_chars:
            out = out or word[:max_chars]
            break
        out = candidate
    return out or fallback


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab Z9-_.!é\u0301ﬁ№ﾃﾞで한👍\n")), max_size=120), st.integers(1, 60))
def test_slug_reads_only_the_words_it_needs_and_names_as_before(text: str, max_chars: int) -> None:
    """The fast path (ASCII, and stopping at the first word that does not fit) names every text as
    the definition does: a cold walk names each of 100k facts, some thousands of words long."""
    assert slug(text, max_chars) == _slug_by_the_definition(text, max_chars)
    assert slug(text * 50, max_chars) == _slug_by_the_definition(text * 50, max_chars)


@pytest.mark.parametrize(("value", "suffix", "name"), [
    ("ci", "", "ci"),
    ("area/ci", "", "area\u2215ci"),
    (".", "", "\u2024"),
    ("..", "", "\u2024."),
    (".wip", "", "\u2024wip"),  # a hidden name would answer no lookup
    (".secret", ".md", "\u2024secret.md"),
    ("", "", "_"),
    ("Caroline", ".md", "Caroline.md"),
    ("nul\0byte", "", "nulbyte~3cffbd713f"),  # not "nulbyte": that is another value's name
    # a stand-in as written is another value's name: the hash keeps them apart (found 2026-12-07)
    ("a\u2215b", "", "a\u2215b~fb413ae893"), ("\u2024hidden", "", "\u2024hidden~4b9b1edd55"),
    ("_", "", "_~53a0acfad5"), ("pic\u240a", "", "pic\u240a~450f8055a9"),
    ("nl\nx", "", "nl\u240ax"), ("red\x1b[31mX", ".md", "red\u241b[31mX.md"), ("del\x7f", "", "del\u2421"),
    # C1 controls have no pictures: U+FFFD, and the value's hash keeps distinct values apart
    ("csi\x9b31mX", "", "csi\ufffd31mX~60ac60727e"), ("nel\x85x", ".md", "nel\ufffdx~65fddf1643.md"),
    ("nel\x86x", "", "nel\ufffdx~d230f4e2f8"),
])
def test_encode_value(value: str, suffix: str, name: str) -> None:
    assert encode_value(value, suffix) == name


@pytest.mark.parametrize("value", ["ci", "area/ci", ".", "..", ".notes", "..x", "Caroline", "session 1/2", ""])
def test_decode_value_inverts_encode(value: str) -> None:
    assert decode_value(encode_value(value, ".md"), ".md") == value
    assert decode_value(encode_value(value)) == value


@pytest.mark.parametrize("value", [".notes", ".", "..", ".git", "/x", "a"])
def test_every_value_names_a_path_that_resolves(value: str) -> None:
    """A stored value never becomes a hidden name: the mount resolves no hidden name (a session ".notes"
    was listed in sessions/ and gave ENOENT to `cat sessions/.notes/transcript.md`)."""
    name = encode_value(value)
    assert resolve(("sessions", name)) == paths.Match(Kind.SESSION, {"session_name": name})
    assert resolve(("facts", "by-tag", name)) is not None
    assert resolve(("entities", encode_value(value, ".md"))) is not None


@pytest.mark.parametrize("value", ["tab\there", "nl\nx", "bell\x07", "a\u240ab", "nel\x85x", "a\ufffdb", "a\u2215b",
                                   "\u2024x", "_", "x~0123456789"])
def test_a_name_with_a_control_picture_or_a_hash_is_found_through_the_listing(value: str) -> None:
    """`a␊b` is the name of a tag "a\\nb" and of one holding U+240A as written: only the listing knows."""
    assert decode_value(encode_value(value)) is None


def test_long_values_are_cut_and_stay_distinct() -> None:
    a, b = "s" * 300 + "a", "s" * 300 + "b"
    na, nb = encode_value(a, ".md"), encode_value(b, ".md")
    assert na != nb
    assert len(na.encode()) <= 255 and na.endswith(".md")
    assert decode_value(na, ".md") is None  # shortened: only the listing knows the value



@pytest.mark.parametrize(("name", "note"), [
    ("db.md", "db.md"),
    ("batch.jsonl", "batch.jsonl.md"),
    ("j" * 252 + ".md", "j" * 252 + ".md"),
    ("j" * 246 + ".jsonl", "j" * 246 + ".jsonl.md"),  # 255 bytes with .md
])
def test_a_rejection_note_s_name(name: str, note: str) -> None:
    assert rejected_name(name) == note


@pytest.mark.parametrize(("a", "b"), [
    ("j" * 249 + ".jsonl", "j" * 248 + "k.jsonl"),  # found 2026-12-08: a 258-byte note name
    ("é" * 125 + "a.txt", "é" * 125 + "b.txt"),  # cut at a character, not inside one
])
def test_a_long_name_s_note_is_cut_and_stays_distinct(a: str, b: str) -> None:
    na, nb = rejected_name(a), rejected_name(b)
    assert na != nb
    for note in (na, nb):
        assert len(note.encode()) <= 255 and note.endswith(".md") and note.startswith(a[:100]), note


@pytest.mark.parametrize(("name", "query"), [
    ("plain words", "plain words"),
    ("CI%2FCD", "CI/CD"),
    ("CI%2fCD", "CI/CD"),
    ("a\u2215b", "a/b"),
    ("50% off", "50% off"),
])
def test_decode_query(name: str, query: str) -> None:
    assert decode_query(name) == query


@pytest.mark.parametrize(("fn", "args", "name"), [
    (fact_name, ("Tests use nextest.", "f-1"), "tests-use-nextest--f-1.md"),
    (fact_name, ("!!!", "f-2"), "fact--f-2.md"),
    (turn_name, (3, "Caroline"), "0003-caroline.md"),
    (turn_name, (12345, "Dr. Who"), "12345-dr-who.md"),
    (turn_name, (None, None), "0000-turn.md"),
    (version_name, (2,), "v2.md"),
    (version_name, (2, "summaries"), "v2-summary.md"),
    (hit_name, (1, "facts", "Tests use nextest"), "01-fact-tests-use-nextest.md"),
    (hit_name, (7, "turns", "Bob: hi", 3), "007-turn-bob-hi.md"),
    (disambiguate, ("0003-bob.md", "t-9"), "0003-bob--t-9.md"),
])
def test_file_names(fn, args, name: str) -> None:
    assert fn(*args) == name


@pytest.mark.parametrize(("name", "mem_id"), [
    ("tests-use-nextest--f-1.md", "f-1"),
    ("fact--x--y.md", "x--y"),
    ("no-separator.md", None),
    ("slug--bad id.md", None),
    ("slug--f-1.txt", None),
])
def test_parse_fact_name(name: str, mem_id: str | None) -> None:
    assert parse_fact_name(name) == mem_id


@pytest.mark.parametrize(("name", "version"), [("v1.md", 1), ("v10-fact.md", 10), ("v0.md", None),
                                               ("v1.txt", None), ("v01.md", None)])
def test_parse_version_name(name: str, version: int | None) -> None:
    assert parse_version_name(name) == version


@pytest.mark.parametrize(("row", "name"), [
    ({"table": "turns", "speaker": "maya", "content": "👍"}, "10-turn-maya-thumbs-up-sign.md"),
    ({"table": "turns", "speaker": "maya", "content": "Sure, ship it"}, "10-turn-maya-sure-ship-it.md"),
    ({"table": "turns", "speaker": "maya", "content": "??"}, "10-turn-maya-question-mark.md"),
    ({"table": "turns", "speaker": "maya", "content": "👍👍 !"}, "10-turn-maya-thumbs-up-sign.md"),
    ({"table": "facts", "content": "🚀"}, "10-fact-rocket.md"),
    ({"table": "facts", "content": "本番環境でデプロイする"}, "10-fact-本番環境でデプロイする.md"),
])
def test_hit_names_say_what_the_hit_holds(row: dict, name: str) -> None:
    """A turn of symbols only is not named by its speaker alone (10-turn-maya.md)."""
    assert hit_name(10, row["table"], hit_label(row)) == name


@pytest.mark.parametrize("values", [("a/b", "a\u2215b"), (".hidden", "\u2024hidden"), ("", "_"),
                                    ("nul\0byte", "nulbyte"), ("nl\nx", "nl\u240ax"), ("a\x85", "a\x86", "a\ufffd")])
def test_distinct_values_have_distinct_names(values: tuple[str, ...]) -> None:
    """Found 2026-12-07: a tag "a/b" and a tag "a∕b" were listed as two directories of one name."""
    assert len({encode_value(v) for v in values}) == len(values)
    assert len({encode_value(v, ".md") for v in values}) == len(values)
