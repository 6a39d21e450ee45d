"""Render a RecallResult for people (text), scripts (json) and model context (context: compact XML).

The mount serves the same bytes as results.json and context.xml, so there is one renderer.
"""

from __future__ import annotations

import json
import shlex
import textwrap
from xml.sax.saxutils import escape, quoteattr

from recallfs.query.fallback import FALLBACK_NOTE
from recallfs.query.query_syntax import parse_query
from recallfs.query.results import RecallResult
from recallfs.query.visible import escaped_controls, xml_chars


def render_json(result: RecallResult) -> str:
    return json.dumps(result.as_json(), indent=2, ensure_ascii=False) + "\n"


def _status_line(result: RecallResult) -> str:
    if not result.degraded:
        return {"lexical": "lexical arm (chosen)", "semantic": "semantic arm (chosen)"}.get(
            result.arm, "hybrid (lexical + semantic)")
    if not result.lexical_only:  # both arms ran, on a store that may lack the newest writes
        return f"degraded: {result.degraded_reason}"
    return f"degraded: {result.degraded_reason} (lexical arm only)"


def render_text(result: RecallResult, width: int = 100) -> str:
    lines = [
        f"recall {result.query!r} in {result.workspace} as {result.agent}: "
        f"{len(result.hits)} of {result.total_candidates} hits, {_status_line(result)}",
    ]
    for note in result.notes:
        lines.append(f"  note: {note}")
    if result.entity is not None:  # an exact entity match: its card comes before the ranked hits
        card = result.entity
        lines.append(f"  entity {card.name}: {card.total_facts} current facts")
        for f in card.facts:
            text = f"(hit {f['hit']} below)" if "hit" in f else escaped_controls(f["content"])
            lines.append("     - " + textwrap.shorten(f"[{f['kind']} {f['id']}] {text}", width=width - 7,
                                                    placeholder=" ..."))
    for hit in result.hits:
        r = hit.row
        when = r["created_at"].strftime("%Y-%m-%d") if r["created_at"] else "?"
        who = f" {r['speaker']}:" if r.get("speaker") else ""
        head = (
            f"{hit.rank:>3}. [{hit.table[:-1] if hit.table != 'summaries' else 'summary'} {hit.id} "
            f"{r['source_id']}] {when} score {hit.score:.3f} ({'+'.join(hit.arms)})"
        )
        lines.append(head + (f" stale: {r['stale']}" if r.get("stale") else "")
                     + (" (near-miss)" if r.get("near_miss") else ""))
        # escaped before wrapping, which would turn \x1c..\x1f into spaces and miscount \x1b's width
        body = textwrap.shorten(escaped_controls(f"{who} {r['content']}".strip()), width=width * 3,
                                placeholder=" ...")
        lines.extend("     " + part for part in textwrap.wrap(body, width=width - 5))
        if hit.replaces:
            lines.append(f"     (replaces {', '.join(hit.replaces)})")
    if result.has_more:
        lines.append(f"  more: add --offset {result.offset + len(result.hits)} for the next page")
    if not result.hits:
        lines.append("  no hits")
    return escaped_controls("\n".join(lines)) + "\n"  # and the rest: ids, tags in notes, stale reasons


def _text(value: str) -> str:
    """Element text: one stored control character must not make the whole block unreadable XML."""
    return escape(xml_chars(value))


def _attr(value: str) -> str:
    return quoteattr(xml_chars(value))


def next_page_command(query: str, offset: int, k: int) -> str:
    """The shell command for the page at `offset`. The query comes last, after `--`: a query starting
    with '-' (recall/-deploy/) is then not read as an option. An inline offset: wins over --offset, so a
    query holding one gets the new one inline too (the last one counts)."""
    if parse_query(query).options.offset is not None:
        query = f"{query} offset:{offset}"
    return f"recallfs recall --offset {offset} -k {k} --format context -- {shell_word(query)}"


def shell_word(text: str) -> str:
    """`text` as one shell word. Control characters (an ESC in a recall directory's name) cannot stand in
    XML or a terminal, so such text is written as bash's $'...' with escapes, which means the same text."""
    if not any(_is_control(ch) for ch in text):
        return shlex.quote(text)
    return "$'" + "".join(_escaped(ch) for ch in text) + "'"


def _is_control(ch: str) -> bool:
    return ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0


def _escaped(ch: str) -> str:
    """One character inside $'...': C0 and DEL as \\xNN, C1 as \\uNNNN (\\xNN would be a byte, not UTF-8)."""
    code = ord(ch)
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0x80 <= code < 0xA0:
        return f"\\u{code:04x}"
    return "\\" + ch if ch in "\\'" else ch


def render_context(result: RecallResult) -> str:
    """A compact block to paste into a model's context; every hit cites its id and source."""
    attrs = (
        f"query={_attr(result.query)} workspace={_attr(result.workspace)} "
        f"hits=\"{len(result.hits)}\" total=\"{result.total_candidates}\" "
        f"degraded=\"{str(result.degraded).lower()}\""
    )
    if result.degraded_reason:
        attrs += f" degraded_reason={_attr(result.degraded_reason)}"
    out = [f"<memory {attrs}>"]
    if result.entity is not None:  # an exact entity match: its card comes before the ranked hits
        card = result.entity
        out.append(f"<entity name={_attr(card.name)} facts=\"{card.total_facts}\">")
        out.extend(f"<fact id={_attr(f['id'])} kind={_attr(f['kind'])} hit=\"{f['hit']}\"/>" if "hit" in f
                   else f"<fact id={_attr(f['id'])} kind={_attr(f['kind'])}>{_text(f['content'])}</fact>"
                   for f in card.facts)
        out.append("</entity>")
    # Hits from the filter fallback match the filters, not the text: a model must be told.
    out.extend(f"<note>{_text(n)}</note>" for n in result.notes if n.startswith(FALLBACK_NOTE))
    for hit in result.hits:
        r = hit.row
        when = r["created_at"].isoformat(sep=" ", timespec="minutes") if r["created_at"] else ""
        extra = f" speaker={_attr(r['speaker'])}" if r.get("speaker") else ""
        extra += f" session={_attr(r['session'])}" if r.get("session") else ""
        extra += f" replaces={_attr(' '.join(hit.replaces))}" if hit.replaces else ""
        extra += f" stale={_attr(r['stale'])}" if r.get("stale") else ""  # evidence of a replaced fact
        extra += " near_miss=\"true\"" if r.get("near_miss") else ""  # below the relevance floor
        out.append(
            f"<hit rank=\"{hit.rank}\" id={_attr(hit.id)} table=\"{hit.table}\" kind={_attr(r['kind'])} "
            f"source={_attr(r['source_id'])} date=\"{when}\" score=\"{hit.score:.3f}\"{extra}>"
            f"{_text(r['content'])}</hit>"
        )
    nxt = result.offset + len(result.hits)
    if result.has_more:
        cli = next_page_command(result.query, nxt, result.k)
        out.append(
            f"<pagination offset=\"{result.offset}\" next_offset=\"{nxt}\" has_more=\"true\">"
            f"{_text(f'more hits: add offset:{nxt} to the query, or run: {cli}')}</pagination>"
        )
    else:
        out.append(f"<pagination offset=\"{result.offset}\" has_more=\"false\">no more hits</pagination>")
    if not result.hits:
        out.append("<note>no memory matched the query</note>")
    out.append("</memory>")
    return "\n".join(out) + "\n"


RENDERERS = {"json": render_json, "text": render_text, "context": render_context}
