# ruff: noqa: E501
"""The currentness eval set: questions whose answer changed over time, written by the project.

    python -m recallfs.evals.currentness_data     # writes evals/data/currentness_memory.jsonl and _queries.json

Six made-up workspaces (an infra team, a person's assistant, a design studio, a teacher, a research lab,
a bakery), eight changing attributes each: 48 questions. Each attribute's value is said in a conversation
(a turn, in the middle of others), distilled into a fact, and named in that session's summary; later
sessions change it once or twice. The facts record the change four ways in turn (a new version of the
same id, `supersedes`, a shared `slot`, an old fact's later version with `superseded_by`), and one
attribute in five has facts that cite no turn (`refs`), so only their conversation links them. Some
first conversations hold a bare question that restates the eval query ("Where is the primary database
these days?"), and in one attribute in three the old value is said right after the eval's own question
("Who leads the on-call rotation? For the record, Priya leads ..."), so that the stale turn matches the
query best.

Per question the gold **current** memories are the newest fact, the turn that said the newest value and
the summary of that session; the **stale** ones are every older fact, turn and summary that stated an
older value. Pure and deterministic: the same files every run (tests/test_eval_currentness.py checks that
the committed files are this module's output).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parent / "data"
MEMORY_PATH = DATA_DIR / "currentness_memory.jsonl"
QUERIES_PATH = DATA_DIR / "currentness_queries.json"
ORG = "cur"
MECHANISMS = ("version", "supersedes", "slot", "superseded_by")
SESSIONS_PER_WORKSPACE = 4
LEADS = ("Quick update:", "Heads up,", "For the record,", "Decision made:", "Noting this down:", "So we agreed:")
TAILS = ("I'll tell the others.", "Can you remember that?", "That's settled then.", "Please update the notes.",
         "Let's see how it goes.", "Ping me if that's a problem.")
FILLERS = (
    ("Morning! Anything urgent before we start?", "Nothing urgent, the queue is quiet."),
    ("Thanks, that's all for today.", "Great, talk soon."),
    ("Can you send me the notes afterwards?", "Sure, they'll be in the shared folder."),
)


@dataclass(frozen=True, slots=True)
class Topic:
    entity: str
    question: str  # the eval query
    values: tuple[str, ...]  # what was true, oldest first: each a sentence stating the value
    ask: str | None = None  # a bare question asked in the first conversation, before the answer


@dataclass(frozen=True, slots=True)
class Workspace:
    name: str
    people: tuple[str, str]
    start: str
    topics: tuple[Topic, ...]


WORKSPACES: tuple[Workspace, ...] = (
    Workspace("platform", ("maya", "atlas"), "2025-09-01T09:00", (
        Topic("database", "where is the primary database", (
            "The primary database runs on db1.internal.",
            "The primary database moved to db2.internal to get faster disks.",
            "The primary database now lives on pg-main.internal in the new cluster."),
            ask="Where is the primary database these days?"),
        Topic("deploy", "what do we deploy the API to", (
            "The API is deployed to the Hetzner box with systemd units.",
            "The API is deployed to Fly.io machines in two regions.")),
        Topic("oncall", "who leads the on-call rotation", (
            "Priya leads the on-call rotation and owns the pager schedule.",
            "Tomasz took over leading the on-call rotation from Priya.")),
        Topic("ci", "which CI service runs our builds", (
            "Our builds run on Jenkins on the old build server.",
            "Builds run on GitHub Actions with self-hosted runners."),
            ask="Which CI service runs our builds?"),
        Topic("logs", "where do application logs go", (
            "Application logs are shipped to Elasticsearch.",
            "Application logs go to Loki, and Elasticsearch was switched off.",
            "Application logs go to ClickHouse through Vector since the Loki costs grew.")),
        Topic("staging", "what is the staging URL", (
            "Staging is at staging.acme.dev.",
            "Staging moved to preview.acme.dev, one per pull request.")),
        Topic("backups", "how often are database backups taken", (
            "Database backups are taken nightly at 02:00.",
            "Database backups are taken every hour with point-in-time recovery.")),
        Topic("registry", "which container registry do we push images to", (
            "Images are pushed to Docker Hub under the acme organisation.",
            "Images are pushed to GitHub Container Registry (ghcr.io/acme).")),
    )),
    Workspace("zoe", ("zoe", "pal"), "2025-10-06T07:30", (
        Topic("zoe", "what does Zoe drink in the morning", (
            "Zoe drinks a double espresso every morning.",
            "Zoe switched to decaf oat flat whites in the morning."),
            ask="What should I order for Zoe's morning coffee?"),
        Topic("gym", "which days does Zoe go to the gym", (
            "Zoe goes to the gym on Mondays and Thursdays.",
            "Zoe goes to the gym on Tuesdays and Saturdays now that her schedule changed.")),
        Topic("dentist", "who is Zoe's dentist", (
            "Zoe's dentist is Dr. Okafor on Mill Street.",
            "Zoe's dentist is Dr. Lindqvist at the Harbour clinic.")),
        Topic("car", "what car does Zoe drive", (
            "Zoe drives a blue 2012 Honda Civic.",
            "Zoe sold the Civic and drives a used Kia e-Niro.",
            "Zoe drives a grey Skoda Enyaq after the e-Niro was written off.")),
        Topic("restaurant", "what is Zoe's favourite restaurant", (
            "Zoe's favourite restaurant is Luigi's trattoria.",
            "Zoe's favourite restaurant is the Sichuan place, Chilli House.")),
        Topic("running", "how far does Zoe run on weekends", (
            "Zoe runs 5 km on weekends.",
            "Zoe runs 10 km on weekends while training for the half marathon."),
            ask="How far is Zoe running on weekends?"),
        Topic("bookclub", "when does Zoe's book club meet", (
            "Zoe's book club meets on the first Wednesday of the month.",
            "Zoe's book club meets on the last Sunday of the month.")),
        Topic("phone", "which phone plan is Zoe on", (
            "Zoe is on the Vodafone unlimited plan.",
            "Zoe moved to a cheaper giffgaff 20 GB plan.")),
    )),
    Workspace("studio", ("ines", "atlas"), "2025-11-03T10:00", (
        Topic("brand", "which typeface do we use for headings", (
            "Headings are set in Playfair Display.",
            "Headings are set in Fraunces, replacing Playfair Display.")),
        Topic("brand", "what is the brand colour", (
            "The brand colour is teal #0F766E.",
            "The brand colour is coral #F97360 after the rebrand.")),
        Topic("orbit", "who is our contact at Orbit", (
            "Our contact at Orbit is Jonas Meyer, the marketing lead.",
            "Our contact at Orbit is Aiko Tanaka since Jonas left the company."),
            ask="Who do I talk to at Orbit?"),
        Topic("invoices", "which tool do we send invoices with", (
            "Invoices are sent with FreshBooks.",
            "Invoices are sent with Stripe Invoicing.")),
        Topic("meetings", "when is the weekly studio meeting", (
            "The weekly studio meeting is on Monday at 10:00.",
            "The weekly studio meeting is on Wednesday at 14:00.",
            "The weekly studio meeting is on Friday at 09:30 to wrap up the week.")),
        Topic("lumen", "when is the Lumen website due", (
            "The Lumen website is due on 15 January.",
            "The Lumen website deadline slipped to 12 February.")),
        Topic("files", "where are the design files stored", (
            "Design files are stored in Dropbox under /Studio.",
            "Design files are stored in the shared Google Drive, Dropbox was cancelled.")),
        Topic("review", "who signs off design reviews", (
            "Design reviews are signed off by Ines.",
            "Design reviews are signed off by Marco while Ines is on leave.")),
    )),
    Workspace("ortiz", ("ms-ortiz", "aide"), "2025-09-08T15:00", (
        Topic("exam", "when is the chemistry exam", (
            "The chemistry exam is on 12 December.",
            "The chemistry exam was moved to 9 January because of the strike."),
            ask="When is the chemistry exam?"),
        Topic("room", "which room is the chemistry class in", (
            "Chemistry is taught in room B12.",
            "Chemistry moved to lab C3 after the renovation.")),
        Topic("grading", "how is the final grade weighted", (
            "The final grade is 60% exam and 40% coursework.",
            "The final grade is 50% exam, 30% coursework and 20% lab reports.")),
        Topic("parents", "when is the parents' evening", (
            "Parents' evening is on 20 November.",
            "Parents' evening was rescheduled to 27 November.")),
        Topic("textbook", "which textbook do students use", (
            "Students use Chemistry for You, 3rd edition.",
            "Students use the free OpenStax Chemistry 2e textbook.")),
        Topic("office-hours", "when are Ms Ortiz's office hours", (
            "Ms Ortiz holds office hours on Tuesday after school.",
            "Ms Ortiz holds office hours on Thursday lunchtime.",
            "Ms Ortiz holds office hours online on Monday evenings.")),
        Topic("trip", "where is the class field trip going", (
            "The class field trip goes to the Science Museum.",
            "The class field trip goes to the water treatment plant instead.")),
        Topic("captain", "who is the lab safety captain", (
            "Amara is the lab safety captain.",
            "Leo is the lab safety captain this term.")),
    )),
    Workspace("kinetics", ("dr-chen", "atlas"), "2025-08-04T11:00", (
        Topic("compute", "which cluster do we train on", (
            "Training runs on the university's Hydra cluster.",
            "Training runs on rented Lambda H100 nodes.")),
        Topic("dataset", "which version of the dataset is current", (
            "The current dataset version is kinetics-v3.",
            "The current dataset version is kinetics-v4 with the relabelled clips."),
            ask="Which version of the dataset should I use?"),
        Topic("paper", "when is the paper deadline", (
            "The paper deadline is 1 March for ICML.",
            "The paper deadline is 22 May for NeurIPS after we skipped ICML.")),
        Topic("baseline", "what is our baseline model", (
            "Our baseline model is ResNet-50 with temporal pooling.",
            "Our baseline model is VideoMAE-B.",
            "Our baseline model is the distilled VideoMAE-S to save compute.")),
        Topic("meeting", "when is the group meeting", (
            "The group meeting is on Thursdays at 16:00.",
            "The group meeting is on Tuesdays at 11:00.")),
        Topic("quota", "how many GPU hours do we have per month", (
            "We have 2,000 GPU hours per month.",
            "We have 5,000 GPU hours per month after the grant renewal.")),
        Topic("storage", "where is the raw video stored", (
            "Raw video is stored on /data/kinetics on the NAS.",
            "Raw video is stored in the S3 bucket s3://kin-raw.")),
        Topic("reviewer", "who reviews experiment plans", (
            "Experiment plans are reviewed by Sam.",
            "Experiment plans are reviewed by Dr. Chen herself.")),
    )),
    Workspace("bakery", ("rosa", "helper"), "2025-07-07T06:00", (
        Topic("flour", "who supplies our flour", (
            "Our flour comes from Millers & Co.",
            "Our flour comes from the organic mill in Hallau.")),
        Topic("hours", "what are the opening hours", (
            "The bakery opens 7:00 to 18:00, Tuesday to Sunday.",
            "The bakery opens 6:30 to 14:00, Wednesday to Sunday."),
            ask="What are the opening hours again?"),
        Topic("sourdough", "how much does the sourdough loaf cost", (
            "The sourdough loaf costs 4.50.",
            "The sourdough loaf costs 5.20 since flour prices went up.",
            "The sourdough loaf costs 5.80 from this month.")),
        Topic("delivery", "who delivers our orders", (
            "Orders are delivered by Velo Couriers.",
            "Orders are delivered by our own cargo bike.")),
        Topic("payments", "which card reader do we use", (
            "We take cards with a SumUp reader.",
            "We take cards with a Zettle reader.")),
        Topic("weekend", "who manages the shop at weekends", (
            "Hugo manages the shop at weekends.",
            "Sina manages the shop at weekends.")),
        Topic("special", "what is the weekend special", (
            "The weekend special is cardamom buns.",
            "The weekend special is pistachio croissants.")),
        Topic("accountant", "who is our accountant", (
            "Our accountant is Bea Kraus.",
            "Our accountant is the firm Nordbuch.")),
    )),
)


def _ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def _stage_sessions(index: int, stages: int) -> list[int]:
    """Which of the workspace's sessions says each value: spread so sessions mix attributes."""
    if stages == 3:
        return [index % 2, 2, 3]
    return [index % 2, 2 + index % 2]


@dataclass(slots=True)
class _Said:
    """One value said in a session: the topic, its stage, and the turn that says it."""

    topic: int
    stage: int
    source_id: str = ""
    created_at: datetime | None = None


def _turns(ws: Workspace, session: int, said: list[_Said], when: datetime, sid: str) -> tuple[list[dict[str, Any]], datetime]:
    """A session's turns: a greeting, then per value (an optional bare question) and the statement with
    an answer, then a goodbye. Fills in each _Said's source_id and time."""
    texts: list[tuple[str, _Said | None]] = [(FILLERS[session % 3][0], None), (FILLERS[session % 3][1], None)]
    for item in said:
        topic = ws.topics[item.topic]
        if topic.ask and item.stage == 0:
            texts.append((topic.ask, None))
        n = item.topic + item.stage
        line = f"{LEADS[n % len(LEADS)]} {topic.values[item.stage]} {TAILS[n % len(TAILS)]}"
        if item.topic % 3 == 1 and item.stage < len(topic.values) - 1:
            # the old value said in answer to the eval's own question, as people do: the stale turn
            # then matches the query better than anything current
            line = f"{topic.question[0].upper()}{topic.question[1:]}? {line}"
        texts.append((line, item))
        texts.append(("Got it, noted.", None))
    texts.append((FILLERS[(session + 1) % 3][0], None))
    out = []
    for seq, (text, stated) in enumerate(texts):
        source_id = f"{sid}#{seq}"
        out.append({"type": "turn", "source_id": source_id, "session": sid, "seq": seq,
                    "speaker": ws.people[seq % 2], "content": text, "created_at": _ts(when)})
        if stated is not None:
            stated.source_id, stated.created_at = source_id, when
        when += timedelta(minutes=2)
    return out, when


def _fact_id(ws: Workspace, topic: int, stage: int, mechanism: str) -> str:
    base = f"f-{ws.name}-{topic}"
    return base if mechanism == "version" else f"{base}-{stage}"


def _facts(ws: Workspace, item: _Said, when: datetime, sid: str) -> list[dict[str, Any]]:
    """The fact that distils one said value (and, for superseded_by, the old fact's closing version)."""
    mechanism = MECHANISMS[item.topic % len(MECHANISMS)]
    topic = ws.topics[item.topic]
    rec: dict[str, Any] = {
        "type": "fact", "source_id": f"{sid}#fact-{item.topic}", "id": _fact_id(ws, item.topic, item.stage, mechanism),
        "kind": "fact", "entity": topic.entity, "session": sid, "content": topic.values[item.stage],
        "created_at": _ts(when), "tags": [topic.entity],
    }
    if item.topic % 5 != 4:
        rec["refs"] = [item.source_id]
    if mechanism == "slot":
        rec["slot"] = f"{ws.name}.{item.topic}"
    if mechanism == "supersedes" and item.stage > 0:
        rec["supersedes"] = _fact_id(ws, item.topic, item.stage - 1, mechanism)
    out = [rec]
    if mechanism == "superseded_by" and item.stage > 0:
        old = _fact_id(ws, item.topic, item.stage - 1, mechanism)
        out.append({"type": "fact", "source_id": f"{sid}#fact-{item.topic}-closes", "id": old, "kind": "fact",
                    "entity": topic.entity, "session": sid, "status": "superseded", "superseded_by": rec["id"],
                    "content": topic.values[item.stage - 1], "created_at": _ts(when), "tags": [topic.entity]})
    return out


def _workspace(ws: Workspace) -> tuple[list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    """A workspace's records, and per topic the source ids of each stage: {turn, fact, summary}."""
    records: list[dict[str, Any]] = []
    stages: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(ws.topics))}
    plan = [[] for _ in range(SESSIONS_PER_WORKSPACE)]  # type: list[list[_Said]]
    for i, topic in enumerate(ws.topics):
        for stage, session in enumerate(_stage_sessions(i, len(topic.values))):
            plan[session].append(_Said(i, stage))
    start = datetime.fromisoformat(ws.start)
    for session, said in enumerate(plan):
        sid = f"{ws.name}-s{session + 1}"
        turns, when = _turns(ws, session, said, start + timedelta(days=45 * session), sid)
        records.extend(turns)
        summary_id = f"{sid}#summary"
        records.append({"type": "summary", "source_id": summary_id, "session": sid, "created_at": _ts(when),
                        "title": f"{ws.name} session {session + 1}",
                        "content": " ".join(ws.topics[s.topic].values[s.stage] for s in said)})
        for item in said:
            when += timedelta(minutes=1)
            facts = _facts(ws, item, when, sid)
            records.extend(facts)
            stages[item.topic].append({"stage": item.stage, "turn": item.source_id, "fact": facts[0]["source_id"],
                                       "summary": summary_id, "closing": [f["source_id"] for f in facts[1:]]})
    for rec in records:
        rec["workspace"] = f"{ORG}/{ws.name}"
    return records, stages


def build() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(memory records in file order, questions)."""
    records: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for ws in WORKSPACES:
        recs, stages = _workspace(ws)
        records.extend(recs)
        for i, topic in enumerate(ws.topics):
            said = sorted(stages[i], key=lambda s: s["stage"])
            last = said[-1]
            stale = [sid for s in said[:-1] for sid in (s["turn"], s["fact"], s["summary"], *s["closing"])]
            questions.append({
                "query": topic.question, "workspace": f"{ORG}/{ws.name}",
                "current": [last["fact"], last["turn"], last["summary"]], "stale": stale,
                "mechanism": MECHANISMS[i % len(MECHANISMS)], "refs": i % 5 != 4, "changes": len(said) - 1,
            })
    return records, questions


def main() -> int:
    records, questions = build()
    DATA_DIR.mkdir(exist_ok=True)
    with MEMORY_PATH.open("w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    QUERIES_PATH.write_text(json.dumps(questions, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {MEMORY_PATH.name}: {len(records)} records; {QUERIES_PATH.name}: {len(questions)} questions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
