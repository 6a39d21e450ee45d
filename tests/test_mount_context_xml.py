"""recall/<q>/context.xml through a real FUSE mount: well-formed XML whatever the memories and the query
hold, and a next-page command that runs as printed."""

from __future__ import annotations

import os
import subprocess
import xml.dom.minidom
import xml.etree.ElementTree as ET
from collections.abc import Iterator

import pytest
from mount_helpers import Mount, needs_fuse, serve

from conftest import RECALLFS, fact, turn

pytestmark = [needs_fuse, pytest.mark.mount]

RECORDS = [
    fact("ctl-1", "deploy bell \x07 reset \x1b[0m nonchar \ufffe", id="f-ctl", tags=["t\x07ag", "deploy"]),
    turn("s\x1b", 0, "ma\x1bya", "deploy \x07 ding"),
    *(fact(f"d{i}", f"deploy note {i}: the docs deploy uses rsync", tags=["deploy"]) for i in range(12)),
]


@pytest.fixture(scope="module")
def mnt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mount]:
    yield from serve(tmp_path_factory.mktemp("ctxml"), RECORDS)


def context(mnt: Mount, query: str) -> ET.Element:
    text = (mnt.path / "recall" / query / "context.xml").read_text(encoding="utf-8")
    xml.dom.minidom.parseString(text)  # a second parser: both must read it
    return ET.fromstring(text)


@pytest.mark.parametrize("query", ["deploy bell", "deploy \x1b bell", "ding", "deploy tag:t\x07ag"])
def test_context_xml_with_control_characters_is_well_formed(mnt: Mount, query: str):
    root = context(mnt, query)
    assert root.get("query") == query.replace("\x1b", "\u241b").replace("\x07", "\u2407")
    hits = {h.get("source"): h for h in root.findall("hit")}
    if "ctl-1" in hits:
        assert hits["ctl-1"].text == "deploy bell \u2407 reset \u241b[0m nonchar \ufffd"
    if "s\u241b#0" in hits:
        assert hits["s\u241b#0"].get("speaker") == "ma\u241bya"
    assert hits


# recall/-deploy/ once suggested `recallfs recall -deploy --offset 10 ...`, which argparse refuses.
@pytest.mark.parametrize("query", ["-deploy", "--deploy note", "deploy note offset:1"])
def test_the_next_page_command_in_context_xml_runs(mnt: Mount, query: str):
    pag = context(mnt, query).find("pagination")
    assert pag is not None and pag.get("has_more") == "true" and pag.text
    command = pag.text.split("or run: ", 1)[1]
    env = {**os.environ, **mnt.env, "PATH": f"{RECALLFS.parent}:{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    ranks = [h.get("rank") for h in ET.fromstring(proc.stdout).findall("hit")]
    assert ranks and ranks[0] == str(int(pag.get("next_offset")) + 1)
