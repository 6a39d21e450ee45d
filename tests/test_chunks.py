"""Windows over long memories (query/chunks.py): the pure cutting, from tables, and the real tokenizer's
offsets through Embedder.windows."""

from __future__ import annotations

import pytest

from recallfs.query.chunks import STRIDE, WINDOW, chunk_spans, chunk_texts, window_starts


def _offsets(words: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """A text of these words, one space apart, and each word's (start, end) as a tokenizer gives it."""
    text, spans, at = " ".join(words), [], 0
    for w in words:
        spans.append((at, at + len(w)))
        at += len(w) + 1
    return text, spans


@pytest.mark.parametrize(("pieces", "window", "stride", "starts"), [
    (0, 4, 3, [0]),
    (4, 4, 3, [0]),  # fits exactly: one window
    (5, 4, 3, [0, 3]),  # one past: a second window, ending at the end
    (7, 4, 3, [0, 3]),
    (8, 4, 3, [0, 3, 6]),
    (10, 4, 2, [0, 2, 4, 6]),
    (254, WINDOW, STRIDE, [0]),
    (255, WINDOW, STRIDE, [0, 192]),
    (446, WINDOW, STRIDE, [0, 192]),
    (447, WINDOW, STRIDE, [0, 192, 384]),
])
def test_window_starts(pieces, window, stride, starts):
    assert window_starts(pieces, window, stride) == starts
    if pieces:  # every word piece is in some window, and the last window reaches the end
        covered = {p for s in starts for p in range(s, min(s + window, pieces))}
        assert covered == set(range(pieces))


@pytest.mark.parametrize(("window", "stride"), [(0, 1), (4, 0), (4, 5), (-1, -1)])
def test_window_starts_rejects_gaps_and_nonsense(window, stride):
    with pytest.raises(ValueError, match="stride"):
        window_starts(10, window, stride)


@pytest.mark.parametrize(("words", "window", "stride", "expected"), [
    ([], 4, 3, [""]),  # empty: one chunk, the text itself
    (["a", "bb", "ccc"], 4, 3, ["a bb ccc"]),  # fits: the whole text, untouched
    (["one", "two", "three", "four", "five"], 4, 3, ["one two three four", "four five"]),
    (["w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7"], 4, 2, ["w0 w1 w2 w3", "w2 w3 w4 w5", "w4 w5 w6 w7"]),
    # unicode: offsets are characters, not bytes
    (["naïve", "café", "日本語", "über", "ß"], 3, 2, ["naïve café 日本語", "日本語 über ß"]),
])
def test_chunk_texts_cut_on_offsets(words, window, stride, expected):
    text, offsets = _offsets(words)
    assert chunk_texts(text, offsets, window, stride) == expected
    for start, end in chunk_spans(offsets, len(text), window, stride):
        assert 0 <= start < end <= len(text) or text == ""


def test_a_text_that_fits_is_returned_whole_with_its_surrounding_spaces():
    text = "  padded text  "
    assert chunk_texts(text, [(2, 8), (9, 13)], 4, 3) == [text]


def test_leading_and_trailing_text_outside_word_pieces_is_dropped_only_when_cut():
    text, offsets = _offsets(["x"] * 6)
    text = "  " + text + "  "
    offsets = [(a + 2, b + 2) for a, b in offsets]
    assert chunk_texts(text, offsets, 4, 2) == ["x x x x", "x x x x"]


def test_real_tokenizer_windows(minilm):
    short = "The deploy runs on Fridays."
    words = [f"wörd{i} café" for i in range(300)]  # several word pieces each, non-ASCII
    long = " ".join(words)
    out = minilm.windows([short, long, ""])
    assert out[0] == [short] and out[2] == [""]
    assert len(out[1]) > 2
    assert all(piece in long for piece in out[1])
    assert out[1][0].startswith("wörd0 café") and out[1][-1].endswith("wörd299 café")
    tokenizer = minilm._require().tokenizer
    for piece in out[1]:
        assert len(tokenizer(piece, add_special_tokens=False)["input_ids"]) <= WINDOW
