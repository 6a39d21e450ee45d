"""Labels in either Unicode form (query/labels.py), from tables: the one stored form, the forms a filter
binds, the names the mount gives them, and a record's labels put in that form at ingest."""

from __future__ import annotations

import unicodedata

import pytest

from recallfs.mount.entries import Listing, directory
from recallfs.mount.names import decode_value, encode_value
from recallfs.mount.paths import Kind
from recallfs.query.labels import label, label_forms
from recallfs.query.records import parse_record

NFC_CAFE = "caf\u00e9"
NFD_CAFE = "cafe\u0301"


@pytest.mark.parametrize(("value", "stored"), [
    ("ci", "ci"), (NFC_CAFE, NFC_CAFE), (NFD_CAFE, NFC_CAFE), ("Zoe\u0308", "Zo\u00eb"),
    ("\u1100\u1161", "\uac00"),  # Hangul jamo compose to one syllable
    ("\ufb01", "\ufb01"),  # a ligature is not folded: NFC, not NFKC (a tag is kept as its author wrote it)
    ("", ""),
])
def test_label(value: str, stored: str) -> None:
    assert label(value) == stored


@pytest.mark.parametrize(("value", "forms"), [
    ("ci", ["ci"]), (NFC_CAFE, [NFC_CAFE, NFD_CAFE]), (NFD_CAFE, [NFD_CAFE, NFC_CAFE]), ("日本", ["日本"]),
])
def test_label_forms(value: str, forms: list[str]) -> None:
    assert label_forms(value) == forms


@pytest.mark.parametrize(("value", "name"), [
    (NFD_CAFE, NFC_CAFE), (NFC_CAFE, NFC_CAFE), ("a/" + NFD_CAFE, "a\u2215" + NFC_CAFE),
    ("." + NFD_CAFE, "\u2024" + NFC_CAFE),
])
def test_a_value_is_named_in_nfc_and_either_name_decodes_to_it(value: str, name: str) -> None:
    assert encode_value(value) == name
    assert decode_value(name) == label(value)
    assert decode_value(unicodedata.normalize("NFD", name)) == label(value)


def test_long_values_in_either_form_share_one_cut_name() -> None:
    value = "é" * 200
    assert encode_value(value) == encode_value(unicodedata.normalize("NFD", value))


def test_a_listing_finds_a_name_typed_decomposed_under_that_name() -> None:
    listing = Listing([directory(NFC_CAFE, Kind.TAG, [("tag", NFC_CAFE)], {"tag": NFC_CAFE})])
    found = listing.find(NFD_CAFE)
    assert found is not None and found.name == NFD_CAFE and found.params == {"tag": NFC_CAFE}
    assert listing.find(NFC_CAFE) is listing.entries[0]
    assert listing.find("cafe") is None


def test_ingest_puts_every_label_in_nfc_and_keeps_content_as_written() -> None:
    rec = parse_record({"type": "fact", "source_id": "x", "content": f"at the {NFD_CAFE}", "created_at": "2026-06-01",
                        "tags": [NFD_CAFE, "ci"], "kind": "De\u0301cision", "entity": "Zoe\u0308",
                        "slot": NFD_CAFE}, org="acme", workspace="proj", agent="a")
    as_written = rec.content_hash
    assert rec.normalize_labels() == as_written
    assert (rec.tags, rec.kind, rec.entity, rec.slot) == ([NFC_CAFE, "ci"], "d\u00e9cision", "Zo\u00eb", NFC_CAFE)
    assert rec.content == f"at the {NFD_CAFE}"
    assert rec.normalize_labels() is None  # already in its stored form: one hash
