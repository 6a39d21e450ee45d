"""A small memory set for semantic-arm tests: each question's answer shares no word with it, while
distractors share the question's words but not its meaning. Written for these tests."""

from __future__ import annotations

from conftest import fact, turn

# (question, source_id of the memory that answers it, that memory's content)
PARAPHRASES = [
    ("which programming language is the backend written in", "f-lang",
     "Our server code is all Rust, compiled with cargo."),
    ("what pet animals live at home", "f-pets",
     "Maya adopted two kittens and a puppy last spring."),
    ("how does she travel to the office each morning", "f-commute",
     "Every weekday Priya cycles along the river path to reach her desk."),
    ("when must the annual taxes be filed", "f-tax",
     "Paperwork for the IRS is due on April 15."),
]

_DISTRACTOR_TEMPLATES = [
    "The {w} channel on chat is archived and read-only.",
    "Meeting notes: the {w} agenda item moved to next quarter.",
    "A reminder that {w} badges are printed by facilities.",
    "The wiki page titled {w} has a broken link.",
    "Slides mentioning {w} were shared after the retro.",
]

_FILLER = [
    "The coffee machine on floor three was repaired on Tuesday.",
    "Quarterly planning happens in the large conference room.",
    "The design review for the onboarding flow is on Thursday.",
    "Parking permits renew at the start of each month.",
    "The printer near reception needs new toner.",
    "Lunch and learn sessions are recorded for people in other time zones.",
    "The staging cluster is rebuilt every night at two.",
    "Visitors must sign in at the front desk.",
]


def records() -> list[dict]:
    out: list[dict] = []
    for _question, source_id, content in PARAPHRASES:
        out.append(fact(source_id, content))
    words = sorted({w for q, _, _ in PARAPHRASES for w in q.split() if len(w) > 3})
    for i, w in enumerate(words):
        for j, template in enumerate(_DISTRACTOR_TEMPLATES[: 2 + i % 3]):
            out.append(fact(f"d-{w}-{j}", template.format(w=w)))
    for i, text in enumerate(_FILLER):
        out.append(turn("s-office", i, "sam" if i % 2 else "lee", text))
    return out
