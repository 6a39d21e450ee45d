"""Windows over a long memory for the semantic arm (issue 14): pure functions, and the one that asks
a loaded model's tokenizer for the offsets (encoder_windows).

MiniLM reads the first 256 word pieces of a text and drops the rest, so a memory longer than that is
embedded as overlapping windows of word pieces, each a substring of the memory cut on the tokenizer's
character offsets. A memory that fits stays one chunk, its text unchanged (short-row stores embed
exactly what they did before). developer-notes/semantic-arm.md has the measurements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

WINDOW = 254  # word pieces per window: MiniLM's 256 less [CLS] and [SEP]
STRIDE = 192  # a window starts this many word pieces after the one before (64 overlap)

Span = tuple[int, int]


def window_starts(pieces: int, window: int = WINDOW, stride: int = STRIDE) -> list[int]:
    """The first word piece of each window over `pieces` word pieces; the last window ends at the end."""
    if window <= 0 or stride <= 0 or stride > window:
        raise ValueError(f"need 0 < stride <= window, got window {window}, stride {stride}")
    starts = [0]
    while starts[-1] + window < pieces:
        starts.append(starts[-1] + stride)
    return starts


def chunk_spans(offsets: Sequence[Span], length: int, window: int = WINDOW, stride: int = STRIDE) -> list[Span]:
    """Character spans of the windows over a text of `length` characters whose word pieces (no special
    tokens) sit at `offsets` [(start, end), ...]. A text that fits one window is one span, the whole
    text, so its embedding is the one it always had."""
    if len(offsets) <= window:
        return [(0, length)]
    spans = []
    for first in window_starts(len(offsets), window, stride):
        last = min(first + window, len(offsets)) - 1
        spans.append((offsets[first][0], offsets[last][1]))
    return spans


def chunk_texts(text: str, offsets: Sequence[Span], window: int = WINDOW, stride: int = STRIDE) -> list[str]:
    """The texts of `text`'s windows (chunk_spans), the first one first."""
    return [text[start:end] for start, end in chunk_spans(offsets, len(text), window, stride)]


def encoder_windows(encoder: Any, texts: Sequence[str]) -> list[list[str]]:
    """Each text as the windows `encoder` (a SentenceTransformer) reads whole: one window, the text
    itself, unless it is longer than the model's input. Scaled to the model's own input length (a
    model reading 512 word pieces gets 510-piece windows); an encoder without a tokenizer (an injected
    one) reads each text as one window."""
    tokenizer = getattr(encoder, "tokenizer", None)
    limit = int(getattr(encoder, "max_seq_length", 0) or 0)
    if tokenizer is None or limit <= 2 or not texts:
        return [[t] for t in texts]
    window = limit - 2  # [CLS] and [SEP]
    stride = max(1, window * STRIDE // WINDOW)
    out = [[t] for t in texts]
    # A word piece covers at least one character, so only a text longer than a window can need two:
    # most memories are never tokenized here.
    longer = [i for i, t in enumerate(texts) if len(t) > window]
    if not longer:
        return out
    # verbose=False: a text longer than the model's input is expected here, not worth a warning
    spans = tokenizer([texts[i] for i in longer], add_special_tokens=False, return_offsets_mapping=True,
                      return_attention_mask=False, return_token_type_ids=False, verbose=False)
    for i, offsets in zip(longer, spans["offset_mapping"], strict=True):
        out[i] = chunk_texts(texts[i], [(int(a), int(b)) for a, b in offsets], window, stride)
    return out
