"""Long synthetic documents and tool outputs with facts buried inside, and questions about them.

The long-memory half of the retrieval benchmark (``benchmarks/retrieval.py``,
sets ``documents`` and ``mixed``). Generated here from a seed; no public data.

Six genres, each a few hundred to a few thousand words (log-uniform,
``WORDS``, counted as characters / 6 so that a log or a JSON listing, dense in
tokens, is not three times longer than prose of the same "words"):

``report``   engineering and incident reports (prose paragraphs under headings)
``meeting``  meeting notes (attendees, updates, discussion, decisions, actions)
``readme``   a project's README (features, install, configuration, usage...)
``log``      a service's log (``kind="tool_result"``; timestamped lines)
``json``     a command's JSON-lines output (deployments, buckets, certificates, users)
``tests``    a pytest run (header, progress lines, a failure, warnings, summary)

The first three are stored as ``kind="document"``, the last three as
``"tool_result"``. Each document carries one to three *asked facts*, each a
single sentence (a log line, a JSON record, a test line) at a position drawn
from ``start`` (first 15% of its sentences), ``middle`` (35-65%), ``end``
(75-95%) and ``last`` (the very last sentence of the document); a pytest run
always opens with its platform line and ends with its summary line, asked or
not. Each question names its *needed sentence* (verbatim in exactly one
document) and is paraphrased: it keeps a lexical anchor or two (a project, a
service, a host, a month), not the sentence's wording. Around 60% of asked
facts get a *near miss* in another document of the same genre: the same kind
of fact about another project, host or namespace, with another value (the
question's anchors tell them apart). Every question's anchors are claimed once
per kind, so no other sentence answers it.

    python benchmarks/documents.py                  # stats and a sample to read
    python benchmarks/documents.py --seed 3 --documents 12 --json out.json

Deterministic: the same arguments give byte-identical output (one
``random.Random`` per call; no set or hash order is used).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: the repository's root on the path, for ``benchmarks.*``
    sys.path.append(str(Path(__file__).resolve().parent.parent))

from benchmarks.reading import normalise, split_sentences  # noqa: E402

GENRES = ("report", "meeting", "readme", "log", "json", "tests")
KIND_OF = {"report": "document", "meeting": "document", "readme": "document",
           "log": "tool_result", "json": "tool_result", "tests": "tool_result"}
POSITIONS = ("start", "middle", "end", "last")
WORDS = (300, 3000)  # a document's length in words of prose (``length``), drawn log-uniform
CHARS_PER_WORD = 6
NEAR_MISS_P = 0.6
LAST_P = 0.4  # an asked fact's latest position is the document's last sentence


# -- the data model ------------------------------------------------------------


@dataclass
class Document:
    doc_id: str
    kind: str  # document | tool_result
    genre: str
    title: str
    source: str
    text: str
    at: datetime


@dataclass
class DocQuestion:
    qid: str
    text: str
    doc_id: str
    sentence: str  # the needed sentence: verbatim in this document and no other
    category: str  # where it sits: start, middle, end, last
    answer: str
    genre: str
    kind: str  # the fact kind


@dataclass
class DocumentSet:
    id: str
    documents: list[Document]
    questions: list[DocQuestion]
    near_misses: list[dict[str, str]] = field(default_factory=list)  # {doc_id, sentence, of (qid)}


def to_json(ds: DocumentSet) -> str:
    def encode(value: Any) -> Any:
        if isinstance(value, datetime):
            return value.isoformat()
        raise TypeError(type(value))

    return json.dumps(asdict(ds), default=encode, indent=1, ensure_ascii=False)


def from_json(text: str) -> DocumentSet:
    raw = json.loads(text)
    docs = [Document(**{**d, "at": datetime.fromisoformat(d["at"])}) for d in raw["documents"]]
    return DocumentSet(raw["id"], docs, [DocQuestion(**q) for q in raw["questions"]], raw.get("near_misses", []))


# -- pools ----------------------------------------------------------------------

PROJECTS = [
    "Ledgerline", "Harbor Sync", "Quillstone", "Beaconry", "Tessellate", "Marlin Pay", "Orchid CRM", "Kestrel Dispatch",
    "Atlas Notify", "Cinderblock", "Juniper Search", "Pylon Gateway", "Wavelet Analytics", "Granite Auth",
    "Foxtrot Inventory", "Nimbus Queue", "Sable Reports", "Lattice Forms", "Osprey Maps", "Verdant Billing",
    "Copperfield", "Halyard Scheduler", "Bramble Mail", "Tinker Deploy",
]
TEAMS = ["payments", "platform", "growth", "data", "mobile", "search", "infrastructure", "security", "identity",
         "logistics", "support tooling", "billing"]
PEOPLE = [
    "Rosa Lindqvist", "Tariq Haddad", "Mei Tanaka", "Oluwaseun Adeyemi", "Hannah Kowalski", "Diego Marin",
    "Priya Raman", "Lukas Becker", "Amira Nassar", "Jonah Whitfield", "Sunita Rao", "Pablo Ortega", "Ingrid Solberg",
    "Kwame Mensah", "Elif Yilmaz", "Callum Fraser", "Aiko Mori", "Ravi Chandran", "Freya Lund", "Marcus Greene",
    "Nadia Petrova", "Tomas Silva", "Grace Okafor", "Henrik Dahl", "Leila Karimi", "Owen Brennan", "Sofia Esposito",
    "Victor Hale", "Zoe Chambers", "Ben Adler", "Chloe Martin", "Dmitri Volkov", "Esther Cohen", "Farid Aziz",
    "Gemma Lloyd", "Hugo Laurent", "Isla Murray", "Jamal Wright", "Keiko Sato", "Lena Vogel",
]
COMPONENTS = [
    "invoice renderer", "webhook dispatcher", "session store", "search indexer", "rate limiter", "email sender",
    "PDF exporter", "audit logger", "job scheduler", "image resizer", "feature flag service", "currency converter",
    "notification fan-out", "CSV importer", "geocoder", "report builder",
]
TECHS = ["Kafka", "Redis Streams", "ClickHouse", "Temporal", "NATS", "SQS", "Elasticsearch", "DuckDB", "gRPC",
         "Cloud Run", "Kubernetes CronJobs", "Postgres logical replication"]
VENDORS = ["Brightpath Telecom", "Northstar Cloud", "Kelvin Data", "Arcadia Payments", "Bluefin Security",
           "Meridian Hosting", "Quantix Labs", "Solace Networks", "Tallgrass Analytics", "Vireo Systems",
           "Westbrook CDN", "Zenith Support", "Larkfield Translations", "Oakridge Logging"]
# (as the notes say it, as a question asks it)
SERVICE_KINDS = [
    ("transactional email", "the sending of receipts and password resets"), ("SMS delivery", "text message notifications"),
    ("the CDN", "the delivery of static files to browsers"), ("penetration testing", "the yearly security audit"),
    ("log archiving", "long-term storage of old logs"), ("translation", "the localisation of the interface"),
    ("card processing", "the handling of card payments"), ("uptime monitoring", "external checks that the site is up"),
]
CAUSES = [
    "an expired TLS certificate on the internal load balancer", "a connection pool sized far too small for holiday traffic",
    "a configuration push that disabled every read replica", "a DNS record still pointing at a decommissioned host",
    "a memory leak in the PDF rendering library", "a cron job that deleted the wrong cache keys",
    "the primary database running out of disk", "malformed responses from a third-party payment API",
    "a race condition in the retry logic", "clock drift on two worker nodes", "a feature flag flipped for all tenants at once",
    "a schema migration that locked the orders table", "an exhausted pool of NAT gateway ports",
]
RESOURCES = ["storage", "data transfer", "GPU instances", "managed databases", "log retention", "load balancers"]
REASONS = ["the security review is not finished", "the vendor contract is still unsigned", "two key engineers are on leave",
           "load testing found a regression", "the translations arrived late", "legal has not approved the new terms",
           "the data migration needs another dry run"]
PG_FEATURES = ["logical replication slots", "generated columns", "the MERGE statement", "JSON path queries",
               "declarative partitioning", "row-level security policies"]
FLAGS = [
    ("STRICT_TLS", "strict certificate checking for outbound calls", "stricter verification of TLS certificates"),
    ("DRY_RUN", "dry-run mode, which logs every write without applying it", "a mode that only pretends to write"),
    ("AUDIT_EXPORT", "the nightly export of the audit log", "exporting audit records every night"),
    ("SLOW_QUERY_LOG", "logging of every query slower than half a second", "recording slow database queries"),
    ("READ_ONLY", "read-only maintenance mode", "a maintenance mode that blocks writes"),
    ("METRICS", "the Prometheus metrics endpoint", "exposing metrics for scraping"),
    ("SSO_ONLY", "single sign-on as the only way to log in", "forcing everyone through SSO"),
]
CHANNELS = ["help-{slug}", "{slug}-dev", "ask-{slug}", "{slug}-support", "team-{team}", "{slug}-oncall"]
SUFFIXES = [("api", "API"), ("worker", "background worker"), ("scheduler", "job scheduler"), ("gateway", "gateway"),
            ("indexer", "indexing service"), ("web", "web front end")]
HOST_KINDS = ["db", "cache", "worker", "edge", "batch", "kafka", "search", "queue"]
REGIONS = ["eu-west-1", "eu-central-1", "us-east-2", "us-west-2", "ap-southeast-1", "ap-northeast-1", "sa-east-1"]
ENVS = ["production", "staging", "canary", "sandbox"]
TABLES = ["invoices", "customers", "line_items", "sessions", "shipments", "audit_events", "payouts", "webhooks",
          "api_keys", "refunds", "subscriptions", "coupons"]
NAMESPACES = ["payments", "platform", "growth", "data", "edge", "internal", "batch", "search", "identity", "ops"]
BUCKET_USES = [("exports", "exported reports"), ("backups", "database backups"), ("uploads", "customer uploads"),
               ("logs", "archived logs"), ("models", "trained models"), ("invoices", "invoice PDFs")]
ISSUERS = ["Let's Encrypt R3", "Sectigo RSA DV", "DigiCert TLS RSA", "GlobalSign GCC R3", "Amazon RSA 2048 M02"]
ROLES = ["admin", "billing-viewer", "support-agent", "read-only", "deployer", "auditor", "owner"]
MODULES = ["billing", "auth", "exports", "search", "notifications", "inventory", "scheduling", "reports", "webhooks", "api"]
CASE_VERBS = ["rounds", "rejects", "retries", "parses", "formats", "expires", "merges", "caches", "escapes", "paginates",
              "refunds", "renders", "validates", "throttles", "signs"]
CASE_NOUNS = ["half_cents", "expired_tokens", "empty_payload", "unicode_names", "leap_day", "large_batches",
              "duplicate_ids", "negative_amounts", "nested_filters", "stale_sessions", "missing_currency",
              "long_subjects", "timezone_offsets", "zero_quantity", "trailing_slash"]
DEPRECATIONS = [
    ("datetime.utcnow()", "datetime.now(tz=UTC)"), ("pkg_resources", "importlib.metadata"),
    ("asyncio.get_event_loop()", "asyncio.get_running_loop()"), ("json_encoders", "field serializers"),
    ("Session.query()", "select() statements"), ("imp.reload()", "importlib.reload()"),
    ("yaml.load() without a Loader", "yaml.safe_load()"), ("distutils.version", "packaging.version"),
]
BRANCHES = ["main", "release-{a}.{b}", "hotfix-{n}", "feature/{word}", "develop", "renovate/deps-{n}"]
BRANCH_WORDS = ["dark-mode", "sso", "exports-v2", "new-checkout", "audit-trail", "bulk-edit", "rate-limits", "pdf-fonts"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
QUARTERS = ["the first quarter", "the second quarter", "the third quarter", "the fourth quarter"]


# -- a document's context ---------------------------------------------------------


@dataclass
class Ctx:
    """What one document is about: its project, people and setting (slots every template can use)."""

    genre: str
    at: datetime
    project: str
    team: str
    people: list[str]
    suffix: tuple[str, str]
    ns: str
    branch: str
    region: str
    env: str
    variant: str = ""  # json: deployments, buckets, certs, users

    @property
    def slug(self) -> str:
        return self.project.lower().replace(" ", "-")

    def slots(self) -> dict[str, Any]:
        slug = self.slug
        return {
            "project": self.project, "slug": slug, "ENV": slug.upper().replace("-", "_"), "team": self.team,
            "person": self.people[0], "person2": self.people[1], "person3": self.people[2],
            "service": f"{slug}-{self.suffix[0]}", "service_q": f"the {self.project} {self.suffix[1]}",
            "ns": self.ns, "branch": self.branch, "region": self.region, "env": self.env,
            "month": MONTHS[self.at.month - 1], "year": self.at.year,
        }


def handle(person: str) -> str:
    return person.lower().replace(" ", ".")


def fill(template: str, slots: dict[str, Any]) -> str:
    return template.format(**slots)


# -- fact kinds ---------------------------------------------------------------------


Draw = Callable[[random.Random, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class FactKind:
    """A kind of fact: how it is drawn, said in one sentence, and asked."""

    name: str
    genre: str
    statement: str
    questions: tuple[str, ...]
    answer: str
    anchors: tuple[str, ...]  # slots that tell this fact from every other of its kind (claimed once)
    draw: Draw
    keep: tuple[str, ...] = ()  # slots a near miss shares with the fact
    variant: str = ""  # json: the kind of record
    fixed: str = ""  # a position the genre always has this fact at (tests: start, last)


def _host(rng: random.Random, s: dict[str, Any]) -> str:
    return f"{rng.choice(HOST_KINDS)}-{rng.randint(1, 40)}.{rng.choice(REGIONS)}.internal"


def _ver(rng: random.Random) -> str:
    return f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"


def _money(rng: random.Random, lo: int, hi: int) -> str:
    return f"{rng.randint(lo, hi) * 10:,}"


def _other_person(rng: random.Random, s: dict[str, Any]) -> str:
    return rng.choice([p for p in PEOPLE if p not in (s["person"], s["person2"])])


def _time(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"


KINDS: list[FactKind] = [
    # -- reports
    FactKind("cause", "report",
             "The root cause of the {m} outage in {project} was {cause}.",
             ("What broke {project} during the {m} incident?", "What turned out to be behind the {m} downtime of {project}?"),
             "{cause}", ("project", "m"),
             lambda r, s: {"m": r.choice(MONTHS), "cause": r.choice(CAUSES)}, keep=("m",)),
    FactKind("conversion", "report",
             "After the redesign, checkout conversion in {project} went from {a}% to {b}%.",
             ("How did the share of shoppers completing a purchase in {project} change with the new design?",
              "What happened to the checkout success rate of {project} once the redesign shipped?"),
             "{a}% to {b}%", ("project",),
             lambda r, s: (lambda a: {"a": f"{a / 10:.1f}", "b": f"{(a + r.randint(3, 40)) / 10:.1f}"})(r.randint(12, 60))),
    FactKind("spend", "report",
             "Monthly cloud spend for {project} came to ${amount} in {m}, most of it on {resource}.",
             ("How much did {project} cost to run on the cloud in {m}?", "What was the infrastructure bill for {project} in {m}?"),
             "${amount}", ("project", "m"),
             lambda r, s: {"amount": _money(r, 800, 9000), "m": r.choice(MONTHS), "resource": r.choice(RESOURCES)}, keep=("m",)),
    FactKind("lead", "report",
             "{lead} will lead the rewrite of the {component} in {project}, reporting to {boss}.",
             ("Who is heading up the rebuild of the {component} for {project}?",
              "Which engineer was put in charge of redoing {project}'s {component}?"),
             "{lead}", ("project", "component"),
             lambda r, s: {"lead": _other_person(r, s), "boss": s["person2"], "component": r.choice(COMPONENTS)}, keep=("component",)),
    FactKind("recommend", "report",
             "We recommend moving the nightly batch jobs of {project} to {tech} before the end of {quarter}.",
             ("Which technology did the review suggest for the overnight processing of {project}?",
              "Where should the night-time batch work of {project} run, according to the recommendation?"),
             "{tech}", ("project",),
             lambda r, s: {"tech": r.choice(TECHS), "quarter": r.choice(QUARTERS)}),
    # -- meeting notes
    FactKind("postpone", "meeting",
             "Decision: the {project} launch moves from {m1} to {m2} because {reason}.",
             ("When is {project} going live now?", "To which month was the release of {project} pushed back?"),
             "{m2}", ("project",),
             lambda r, s: (lambda i: {"m1": MONTHS[i], "m2": MONTHS[(i + r.randint(1, 3)) % 12], "reason": r.choice(REASONS)})(r.randrange(12))),
    FactKind("action", "meeting",
             "Action: {owner} to migrate the {component} to {tech} by {day}.",
             ("Who was given the job of moving the {component} onto {tech}?", "Which person owns the move of the {component} to {tech}?"),
             "{owner}", ("component", "tech"),
             lambda r, s: {"owner": _other_person(r, s), "component": r.choice(COMPONENTS), "tech": r.choice(TECHS),
                           "day": r.choice(WEEKDAYS)}, keep=("component",)),
    FactKind("ratecap", "meeting",
             "The group agreed to cap {project} API usage at {n} requests per minute per customer.",
             ("What per-customer throttle did the team settle on for the {project} API?",
              "How many calls a minute may one customer make to the {project} API?"),
             "{n}", ("project",),
             lambda r, s: {"n": f"{r.randint(6, 300) * 10:,}"}),
    FactKind("vendor", "meeting",
             "We will sign with {vendor} for {sk}, and {vendor2} was turned down on price.",
             ("Which supplier did the {project} team pick for {sk_q}?", "Who will provide {sk_q} for {project}?"),
             "{vendor}", ("project", "sk"),
             lambda r, s: (lambda k, vs: {"sk": k[0], "sk_q": k[1], "vendor": vs[0], "vendor2": vs[1]})(r.choice(SERVICE_KINDS), r.sample(VENDORS, 2)),
             keep=("sk", "sk_q")),
    # -- READMEs
    FactKind("port", "readme",
             "By default the {slug} server listens on port {port}; set {ENV}_PORT to change it.",
             ("Which port does {project} use out of the box?", "What network port is the server of {project} on unless configured otherwise?"),
             "{port}", ("project",),
             lambda r, s: {"port": str(r.choice([r.randint(3000, 9999), r.randint(10000, 60000)]))}),
    FactKind("postgres", "readme",
             "{project} needs PostgreSQL {pg} or newer because it relies on {feature}.",
             ("What is the oldest database version that {project} supports?", "Which minimum Postgres release does {project} require?"),
             "{pg}", ("project",),
             lambda r, s: {"pg": f"{r.randint(11, 16)}.{r.randint(0, 9)}", "feature": r.choice(PG_FEATURES)}),
    FactKind("flag", "readme",
             "Set {ENV}_{flag}=true to turn on {flag_said}.",
             ("How do you enable {flag_q} in {project}?", "Which setting switches on {flag_q} for {project}?"),
             "{ENV}_{flag}=true", ("project", "flag"),
             lambda r, s: (lambda f: {"flag": f[0], "flag_said": f[1], "flag_q": f[2]})(r.choice(FLAGS)),
             keep=("flag", "flag_said", "flag_q")),
    FactKind("contact", "readme",
             "Questions about {project} go to the #{channel} channel, and {reviewer} reviews pull requests on {day}s.",
             ("Where should people ask questions about {project}?", "Which chat room handles questions on {project}?"),
             "#{channel}", ("project",),
             lambda r, s: {"channel": r.choice(CHANNELS).format(slug=s["slug"], team=s["team"].replace(" ", "-")),
                           "reviewer": _other_person(r, s), "day": r.choice(WEEKDAYS)}),
    FactKind("install", "readme",
             "The supported release is pinned with pip install {slug}=={ver}, and older releases get no fixes.",
             ("Which version of {project} do the install instructions pin?", "What release of {project} is the supported one?"),
             "{ver}", ("project",),
             lambda r, s: {"ver": _ver(r)}),
    # -- logs (a timestamp is put in front of every line)
    FactKind("retry", "log",
             "ERROR {service} gave up connecting to {host} after {n} retries: connection refused",
             ("How many attempts did {service_q} make before abandoning the connection to {host}?",
              "After how many retries did {service_q} stop trying to reach {host}?"),
             "{n}", ("service", "host"),
             lambda r, s: {"host": _host(r, s), "n": str(r.randint(3, 64))}, keep=("host",)),
    FactKind("disk", "log",
             "WARN disk usage on {host} reached {pct}% of /var/lib/{slug}, {free} GB left",
             ("How full was the data volume on {host}?", "What share of the disk on {host} was in use when the warning fired?"),
             "{pct}%", ("host",),
             lambda r, s: {"host": _host(r, s), "pct": str(r.randint(81, 99)), "free": str(r.randint(2, 60))}),
    FactKind("slowquery", "log",
             "WARN {service} slow query on table {table} took {ms} ms (threshold 500 ms)",
             ("How long did the sluggish query against {table} take in {service_q}?",
              "What duration was logged for the slow {table} lookup by {service_q}?"),
             "{ms} ms", ("service", "table"),
             lambda r, s: {"table": r.choice(TABLES), "ms": f"{r.randint(510, 48000):,}"}, keep=("table",)),
    FactKind("deploy", "log",
             "INFO deployed {service} version {ver} to {env2} on behalf of {user}",
             ("Which release of {service_q} went out to {env2}?", "What version of {service_q} was rolled out to {env2}?"),
             "{ver}", ("service", "env2"),
             lambda r, s: {"ver": _ver(r), "env2": r.choice(ENVS), "user": handle(_other_person(r, s))}, keep=("env2",)),
    FactKind("oom", "log",
             "ERROR worker process {pid} of {service} was killed by the kernel after using {mb} MB of memory",
             ("How much memory had a process of {service_q} used when the kernel killed it?",
              "At what memory footprint was the {service} worker terminated for running out of memory?"),
             "{mb} MB", ("service",),
             lambda r, s: {"pid": str(r.randint(1000, 65000)), "mb": f"{r.randint(700, 16000):,}"}),
    # -- JSON-lines command output: one record per line
    FactKind("replicas", "json",
             '{{"name": "{dep}", "namespace": "{ns}", "replicas": {n}, "ready": {ready}, "image": "registry.internal/{dep}:{ver}", "age": "{age}d"}}',
             ("How many replicas is the {dep} deployment set to run in the {ns} namespace?",
              "What replica count is configured for {dep} in {ns}?"),
             "{n}", ("dep", "ns"),
             lambda r, s: (lambda n: {"dep": f"{s['slug']}-{r.choice(SUFFIXES)[0]}-{r.randint(2, 99)}", "n": str(n),
                                      "ready": str(max(0, n - r.randint(0, 2))), "ver": _ver(r), "age": str(r.randint(1, 400))})(r.randint(2, 48)),
             keep=("dep",), variant="deployments"),
    FactKind("bucket", "json",
             '{{"bucket": "{bucket}", "region": "{region2}", "objects": {objects}, "size_gb": {size}, "versioning": "{versioning}"}}',
             ("In which region is the bucket holding {use_q} for {project} ({bucket}) stored?",
              "Where does the {bucket} storage bucket of {project} live geographically?"),
             "{region2}", ("bucket",),
             lambda r, s: (lambda u: {"bucket": f"{s['slug']}-{u[0]}-{r.randint(10, 999)}", "use_q": u[1],
                                      "region2": r.choice(REGIONS), "objects": str(r.randint(100, 9_000_000)),
                                      "size_gb": "", "size": f"{r.randint(1, 90000) / 10:.1f}",
                                      "versioning": r.choice(["enabled", "suspended"])})(r.choice(BUCKET_USES)),
             variant="buckets"),
    FactKind("cert", "json",
             '{{"domain": "{domain}", "issuer": "{issuer}", "expires": "{expires}", "days_left": {days}}}',
             ("When does the TLS certificate for {domain} run out?", "On what date does the certificate of {domain} expire?"),
             "{expires}", ("domain",),
             lambda r, s: (lambda d: {"domain": f"{r.choice(['api', 'app', 'admin', 'status', 'hooks', 'cdn', 'auth'])}{r.randint(1, 99)}.{s['slug']}.example.com",
                                      "issuer": r.choice(ISSUERS), "days": str(d),
                                      "expires": (s["at"] + timedelta(days=d)).strftime("%Y-%m-%d")})(r.randint(3, 365)),
             variant="certs"),
    FactKind("user", "json",
             '{{"user": "{user}", "role": "{role}", "mfa": {mfa}, "last_login": "{login}", "team": "{uteam}"}}',
             ("Which access role does {uname} hold in the {project} console?", "What permissions level has {uname} been given in {project}?"),
             "{role}", ("project", "user"),
             lambda r, s: (lambda p: {"user": handle(p), "uname": p, "role": r.choice(ROLES), "mfa": r.choice(["true", "false"]),
                                      "login": (s["at"] - timedelta(days=r.randint(0, 90))).strftime("%Y-%m-%d"),
                                      "uteam": r.choice(TEAMS)})(f"{r.choice(PEOPLE).split()[0]} {r.choice(PEOPLE).split()[1]}"),
             keep=("user", "uname"), variant="users"),
    # -- pytest runs
    FactKind("platform", "tests",
             "platform linux -- Python {py}, pytest-{pt}, pluggy-{pl}",
             ("Which Python version ran the {project} test suite on the {branch} branch?",
              "What interpreter release was used for the {project} tests on {branch}?"),
             "{py}", ("project", "branch"),
             lambda r, s: {"py": f"3.{r.randint(8, 13)}.{r.randint(0, 15)}", "pt": f"{r.randint(7, 8)}.{r.randint(0, 4)}.{r.randint(0, 9)}",
                           "pl": f"1.{r.randint(0, 5)}.{r.randint(0, 2)}"}, fixed="start"),
    FactKind("summary", "tests",
             "===== {f} failed, {p} passed, {sk} skipped in {t}s =====",
             ("How many tests passed when the {project} suite ran on {branch}?",
              "How many tests were skipped in the CI run of {project} on the {branch} branch?"),
             "{p} passed, {sk} skipped", ("project", "branch"),
             lambda r, s: {"f": str(r.randint(1, 4)), "p": str(r.randint(40, 2400)), "sk": str(r.randint(0, 40)),
                           "t": f"{r.randint(300, 90000) / 100:.2f}"}, fixed="last"),
    FactKind("failed", "tests",
             "FAILED tests/{module}/test_{file}.py::test_{case} - AssertionError: expected {exp}, got {got}",
             ("Which check in the {module} tests of {project} failed, and what value did it produce?",
              "What went wrong in the {module} test module of {project}?"),
             "test_{case}: expected {exp}, got {got}", ("project", "module"),
             lambda r, s: (lambda e: {"module": r.choice(MODULES), "file": r.choice(CASE_NOUNS).split("_")[0] + "_" + r.choice(["core", "api", "utils", "models", "views"]),
                                      "case": f"{r.choice(CASE_VERBS)}_{r.choice(CASE_NOUNS)}", "exp": f"{e / 100:.2f}",
                                      "got": f"{(e + r.choice([-1, 1, 100, -100])) / 100:.2f}"})(r.randint(100, 99999)),
             keep=("module",)),
    FactKind("deprecation", "tests",
             "{path}:{line}: DeprecationWarning: {old} is deprecated, use {new} instead",
             ("Which deprecated API does the {project} test run on {branch} warn about, and what replaces it?",
              "What does the deprecation warning in the {branch} tests of {project} tell you to use instead?"),
             "{new}", ("project", "branch"),
             lambda r, s: (lambda d: {"old": d[0], "new": d[1], "path": f"src/{s['slug'].replace('-', '_')}/{r.choice(MODULES)}.py",
                                      "line": str(r.randint(10, 900))})(r.choice(DEPRECATIONS))),
]
KIND = {k.name: k for k in KINDS}


# -- filler ----------------------------------------------------------------------------

SUBJECTS = ["The {team} team", "{person}", "Our on-call engineers", "The platform group", "Two contractors",
            "The support desk", "{person} and {person2}", "The data team", "Product management", "The security reviewers",
            "The release captain", "{person3}"]
VERBS = ["reviewed", "rewrote", "benchmarked", "documented", "simplified", "refactored", "load-tested", "audited",
         "cleaned up", "profiled", "migrated", "split up", "re-estimated", "monitored", "tidied"]
OBJECTS = ["the {component}", "the billing exports", "the onboarding flow", "the nightly backups", "the search index",
           "the admin console", "the staging cluster", "the public API docs", "the alerting rules", "the deployment pipeline",
           "the customer import scripts", "the feature flag setup", "the retry logic in the {component}",
           "the dashboards for {project}", "the database schema", "the on-call runbooks", "the mobile release process"]
QUALIFIERS = ["during {m}", "after the last release", "ahead of the audit", "with help from the {team2} team",
              "without any downtime", "to cut costs", "as part of the quarterly plan", "over two sprints",
              "before the freeze", "at the request of the sales team", "in response to customer feedback",
              "on a tight schedule", "while the migration was paused", "for the {region} region", "last week"]
PROSE = [
    "Traffic to {project} grew steadily through {m}, with the usual dip around the public holidays.",
    "Error rates stayed within the agreed service levels for all but {n} days of the period.",
    "We interviewed {n} customers, most of them small businesses with fewer than fifty staff.",
    "Several respondents asked for better export options, which is already on the roadmap.",
    "Latency at the 95th percentile improved slightly after the cache warm-up change.",
    "Support tickets about login problems fell after the password reset flow was simplified.",
    "We still lack reliable dashboards for the {component}, which slows down investigations.",
    "Two engineers joined the team in {m} and are now fully onboarded.",
    "The staging environment was rebuilt from scratch to match production more closely.",
    "A load test at three times normal traffic showed no new bottlenecks.",
    "The old reporting pipeline will be switched off once the last customers have moved.",
    "Security scanning now runs on every merge request instead of once a night.",
    "Feedback from the sales team suggests that onboarding still takes too long for larger accounts.",
    "{person} ran a short workshop on incident communication for the wider engineering group.",
    "The team agreed to revisit the alerting thresholds after another month of data.",
    "Costs were broadly in line with the forecast, apart from a spike in data transfer.",
    "We deprecated {n} internal endpoints that had no callers in the last ninety days.",
    "A backlog grooming session removed about {n} stale tickets from the board.",
    "None of the changes required downtime, and no rollback was needed.",
    "Customer satisfaction stayed at around {pct} percent in the quarterly survey.",
    "The design review found accessibility gaps in the settings pages.",
    "Monitoring coverage improved after synthetic checks were added for the main user journeys.",
    "Some of the delays came from waiting on approvals from the legal department.",
    "The {component} now emits structured logs, which makes searching them much easier.",
    "Most pages still load in under a second on a typical office connection.",
    "It is not yet clear whether the new pricing tiers changed how customers use the product.",
    "We expect the remaining work to take another {n} weeks, depending on reviews.",
    "The incident channel was quiet for most of {m}, which is a welcome change.",
    "Several flaky tests were quarantined until their owners can look at them.",
    "The {team2} team asked for a shared roadmap so that dependencies are visible earlier.",
]
README_PROSE = [
    "{project} is a small service maintained by the {team} team.",
    "It exposes a JSON API over HTTP and stores its state in PostgreSQL.",
    "Configuration is read from environment variables at start-up; nothing is reloaded at run time.",
    "Run the test suite before opening a pull request, and keep changes small.",
    "The command line tool prints help for every subcommand with --help.",
    "Logs are written to standard output in JSON, one event per line.",
    "Migrations run automatically when the server starts unless you pass --no-migrate.",
    "If the server refuses to start, check that the database URL is reachable from the container.",
    "Most settings have sensible defaults, so a local setup needs only the database URL.",
    "Each release is tagged in git and described in the changelog.",
    "Large imports are processed in batches of a few thousand rows to keep memory flat.",
    "The {component} runs as a separate process and can be scaled on its own.",
    "Metrics are exported in the Prometheus text format.",
    "Please report security issues privately rather than in the public tracker.",
    "Documentation lives in the docs folder and is published on every merge to main.",
    "The public API is versioned, and breaking changes only land in a new major version.",
    "Local development works on Linux and macOS; Windows users should use WSL.",
    "A health endpoint answers on /healthz and reports the database connection status.",
    "Background jobs are retried with exponential backoff, up to a limit you can configure.",
    "Feature requests are welcome, but please open an issue to discuss them first.",
]
FEATURES = ["Fast bulk imports from CSV and JSON", "Role-based access control", "Webhooks for every state change",
            "Full audit trail of admin actions", "Multi-currency support", "Scheduled exports to object storage",
            "A typed Python client", "Single sign-on through SAML and OIDC", "Per-tenant rate limiting",
            "Dark mode in the admin console", "Searchable activity history", "Pluggable storage backends"]
SETTINGS = [("LOG_LEVEL", "sets the log level (default info)"), ("DATABASE_URL", "points at the PostgreSQL database"),
            ("WORKERS", "sets how many worker processes run (default 4)"), ("TIMEOUT", "is the request timeout in seconds"),
            ("CACHE_TTL", "sets how long cached responses live"), ("REGION", "selects the storage region"),
            ("MAX_UPLOAD_MB", "caps the size of an upload"), ("SMTP_HOST", "is the mail relay for notifications")]
LOG_LINES = [
    "INFO {svc} request completed method={method} path={path} status=200 duration_ms={ms}",
    "INFO {svc} request completed method={method} path={path} status={status} duration_ms={ms}",
    "DEBUG {svc} cache hit key={key} ttl={ttl}s",
    "DEBUG {svc} cache miss key={key}",
    "INFO {svc} job {job} started batch_size={n}",
    "INFO {svc} job {job} finished in {ms} ms processed={n}",
    "WARN {svc} retrying request to {dep} attempt={a} backoff_ms={ms}",
    "INFO {svc} health check ok uptime={h}h open_connections={n}",
    "INFO {svc} flushed {n} metrics to the collector",
    "WARN {svc} request to {dep} took {ms} ms",
    "INFO {svc} user {user} signed in from {ip}",
    "DEBUG {svc} gc pause {gc} ms heap={mb}MB",
    "INFO {svc} scheduled task {job} next run in {a} minutes",
    "ERROR {svc} request failed path={path} status=502 upstream={dep}",
    "INFO {svc} consumer lag on topic {topic} is {n} messages",
]
PATHS = ["/v1/invoices", "/v1/customers", "/v1/orders/{id}", "/v2/search", "/healthz", "/v1/exports", "/v1/webhooks",
         "/v1/sessions", "/v1/users/{id}", "/v2/reports", "/v1/payouts", "/metrics"]
JOBS = ["reconcile-payouts", "send-digests", "rebuild-index", "expire-sessions", "sync-currencies", "compact-logs",
        "refresh-tokens", "export-reports", "prune-uploads"]
TOPICS = ["orders.created", "invoices.paid", "users.updated", "events.audit", "exports.ready", "payments.failed"]
NAME_WORDS = ["redis-cache", "nginx-ingress", "cert-manager", "otel-collector", "pgbouncer", "keycloak", "grafana",
              "prometheus", "vector-agent", "minio", "rabbitmq", "statsd-exporter", "fluent-bit", "vault-agent", "coredns"]


def _filler_slots(rng: random.Random, ctx: Ctx) -> dict[str, Any]:
    s = ctx.slots()
    s.update({"m": rng.choice(MONTHS), "n": rng.randint(2, 60), "pct": rng.randint(60, 95), "component": rng.choice(COMPONENTS),
              "team2": rng.choice([t for t in TEAMS if t != ctx.team]), "person": rng.choice(ctx.people),
              "person2": rng.choice(ctx.people), "person3": rng.choice(ctx.people)})
    return s


def _sentence(rng: random.Random, ctx: Ctx, pool: Sequence[str] = PROSE) -> str:
    s = _filler_slots(rng, ctx)
    if rng.random() < 0.5:
        return fill(rng.choice(pool), s)
    text = " ".join(p for p in (fill(rng.choice(SUBJECTS), s), rng.choice(VERBS), fill(rng.choice(OBJECTS), s),
                                fill(rng.choice(QUALIFIERS), s)) if p)
    return text[0].upper() + text[1:] + "."


def _paragraph(rng: random.Random, ctx: Ctx, pool: Sequence[str] = PROSE, lo: int = 3, hi: int = 7) -> list[str]:
    out: list[str] = []
    for _ in range(rng.randint(lo, hi)):
        sentence = _sentence(rng, ctx, pool)
        if sentence not in out:
            out.append(sentence)
    return out


# A body is a list of blocks: (style, items). Styles: heading, para, lines, bullets, code, and meta
# (lines that take no fact: a command line, a list of attendees).
Block = tuple[str, list[Any]]


def length(text: str) -> int:
    """A text's length in words of prose: its characters / 6 (a log line or a JSON record is dense in tokens)."""
    return len(text) // CHARS_PER_WORD


def _words_of(blocks: Sequence[Block]) -> int:
    return sum(length(str(item)) + 1 for _, items in blocks for item in items)


def _report(rng: random.Random, ctx: Ctx, target: int, claims: _Claims) -> tuple[str, list[Block]]:
    kind = rng.choice(["Quarterly engineering report", "Incident review", "Capacity planning report", "Customer research summary"])
    title = f"{ctx.project}: {kind}, {MONTHS[ctx.at.month - 1]} {ctx.at.year}"
    blocks: list[Block] = [("heading", [f"# {title}"]),
                           ("para", [f"Prepared by {ctx.people[0]} for the {ctx.team} team."] + _paragraph(rng, ctx, lo=2, hi=4))]
    sections = ["Summary", "Background", "Findings", "Metrics", "Risks", "Open questions", "Timeline", "Next steps"]
    i = 0
    while _words_of(blocks) < target:
        name = sections[i % len(sections)] + ("" if i < len(sections) else f" ({i // len(sections) + 1})")
        blocks.append(("heading", [f"## {name}"]))
        for _ in range(rng.randint(1, 3)):
            blocks.append(("para", _paragraph(rng, ctx)))
        i += 1
    return title, blocks


def _meeting(rng: random.Random, ctx: Ctx, target: int, claims: _Claims) -> tuple[str, list[Block]]:
    title = f"{ctx.team.capitalize()} weekly sync, {ctx.at.day} {MONTHS[ctx.at.month - 1]} {ctx.at.year} ({ctx.project})"
    blocks: list[Block] = [("heading", [f"# {title}"]), ("meta", [f"Attendees: {', '.join(ctx.people)}", f"Notes taken by {ctx.people[-1]}."])]
    i = 0
    while _words_of(blocks) < target:
        part = i % 4
        if part == 0:
            blocks.append(("heading", ["## Updates"]))
            blocks.append(("bullets", [f"{rng.choice(ctx.people)}: {_sentence(rng, ctx)}" for _ in range(rng.randint(3, 6))]))
        elif part == 1:
            blocks.append(("heading", ["## Discussion"]))
            for _ in range(rng.randint(1, 3)):
                blocks.append(("para", _paragraph(rng, ctx)))
        elif part == 2:
            blocks.append(("heading", ["## Decisions"]))
            blocks.append(("bullets", [_sentence(rng, ctx) for _ in range(rng.randint(2, 4))]))
        else:
            blocks.append(("heading", ["## Action items"]))
            blocks.append(("bullets", [f"{rng.choice(ctx.people)} to follow up on {fill(rng.choice(OBJECTS), _filler_slots(rng, ctx))} by {rng.choice(WEEKDAYS)}."
                                       for _ in range(rng.randint(2, 5))]))
        i += 1
    return title, blocks


def _readme(rng: random.Random, ctx: Ctx, target: int, claims: _Claims) -> tuple[str, list[Block]]:
    s = ctx.slots()
    title = f"{ctx.project} README"
    blocks: list[Block] = [("heading", [f"# {ctx.project}"]), ("para", _paragraph(rng, ctx, README_PROSE, 2, 4))]
    sections = ["Features", "Installation", "Configuration", "Usage", "Architecture", "Troubleshooting", "Contributing", "License"]
    i = 0
    while _words_of(blocks) < target or i < 3:
        name = sections[i % len(sections)]
        if i >= len(sections):
            name = f"{name} notes"
        blocks.append(("heading", [f"## {name}"]))
        if name.startswith("Features"):
            blocks.append(("bullets", [f + "." for f in rng.sample(FEATURES, rng.randint(3, 6))]))
        elif name.startswith("Configuration"):
            blocks.append(("para", _paragraph(rng, ctx, README_PROSE, 1, 3)))
            blocks.append(("bullets", [f"{s['ENV']}_{k} {v}." for k, v in rng.sample(SETTINGS, rng.randint(3, 6))]))
        elif name.startswith(("Installation", "Usage")):
            blocks.append(("para", _paragraph(rng, ctx, README_PROSE, 1, 3)))
            blocks.append(("code", [f"{s['slug']} {rng.choice(['serve', 'migrate', 'import data.csv', 'export --since 7d', 'check'])}"
                                    for _ in range(rng.randint(1, 3))]))
        else:
            for _ in range(rng.randint(1, 2)):
                blocks.append(("para", _paragraph(rng, ctx, README_PROSE + PROSE[:8], 2, 6)))
        i += 1
    blocks.append(("para", _paragraph(rng, ctx, README_PROSE, 1, 2)))
    return title, blocks


def _log(rng: random.Random, ctx: Ctx, target: int, claims: _Claims) -> tuple[str, list[Block]]:
    s = ctx.slots()
    services = [s["service"]] + [f"{s['slug']}-{x}" for x, _ in rng.sample([x for x in SUFFIXES if x != ctx.suffix], 2)]
    title = f"journalctl -u {s['service']} ({ctx.env})"
    lines: list[str] = []
    while sum(length(line) + 1 for line in lines) < target:
        slots = {"svc": rng.choice(services), "method": rng.choice(["GET", "GET", "POST", "PUT", "DELETE"]),
                 "path": rng.choice(PATHS).format(id=rng.randint(100, 99999)), "status": rng.choice([201, 204, 304, 400, 404, 409]),
                 "ms": rng.randint(2, 900), "key": f"{rng.choice(['user', 'invoice', 'session', 'rate'])}:{rng.randint(1, 99999)}",
                 "ttl": rng.choice([30, 60, 300, 3600]), "job": rng.choice(JOBS), "n": rng.randint(1, 5000),
                 "dep": rng.choice(["postgres", "redis", "stripe-proxy", "s3", "smtp-relay", "search"]), "a": rng.randint(1, 5),
                 "h": rng.randint(1, 900), "user": handle(rng.choice(PEOPLE)), "ip": f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
                 "gc": rng.randint(1, 80), "mb": rng.randint(200, 4000), "topic": rng.choice(TOPICS)}
        lines.append(rng.choice(LOG_LINES).format(**slots))
    return title, [("meta", [f"$ journalctl -u {s['service']} --since {ctx.at:%Y-%m-%d} -o short-iso"]), ("lines", lines)]


def _json(rng: random.Random, ctx: Ctx, target: int, claims: _Claims) -> tuple[str, list[Block]]:
    s = ctx.slots()
    command = {"deployments": f"kubectl get deployments -n {ctx.ns} -o jsonl",
               "buckets": f"objctl ls --project {s['slug']} --format jsonl",
               "certs": f"certctl list --domain-suffix {s['slug']}.example.com --json",
               "users": f"{s['slug']} admin users list --json"}[ctx.variant]
    kind = {"deployments": "replicas", "buckets": "bucket", "certs": "cert", "users": "user"}[ctx.variant]
    records: list[str] = []
    seen: set[tuple[str, ...]] = set()
    misses = 0
    while sum(length(r) + 1 for r in records) < target and misses < 200:
        slots = {**s, "at": ctx.at}
        slots.update(KIND[kind].draw(rng, slots))
        if kind == "replicas":
            slots["dep"] = f"{rng.choice(NAME_WORDS)}-{rng.randint(1, 9)}" if rng.random() < 0.5 else slots["dep"]
        fact = KIND[kind]
        key = (fact.name, *(str(slots[a]) for a in fact.anchors))
        record = fill(fact.statement, slots)
        # no record may answer another document's question, or repeat a fact's record
        if key in seen or key in claims.anchors or normalise(record) in claims.statements:
            misses += 1
            continue
        seen.add(key)
        records.append(record)
    return command, [("meta", [f"$ {command}"]), ("lines", records)]


def _tests(rng: random.Random, ctx: Ctx, target: int, claims: _Claims) -> tuple[str, list[Block]]:
    s = ctx.slots()
    title = f"pytest run of {ctx.project} on {ctx.branch}"
    head = [f"$ pytest -v  # {ctx.project}, branch {ctx.branch}",
            "============================= test session starts ==============================",
            f"rootdir: /srv/{s['slug']}, configfile: pyproject.toml", "plugins: cov-4.1.0, xdist-3.5.0, anyio-4.2.0"]
    lines: list[str] = []
    seen: set[str] = set()
    while sum(length(line) + 1 for line in lines) < target:
        module = rng.choice(MODULES)
        case = f"test_{rng.choice(CASE_VERBS)}_{rng.choice(CASE_NOUNS)}"
        name = f"tests/{module}/test_{rng.choice(CASE_NOUNS).split('_')[0]}_{rng.choice(['core', 'api', 'utils', 'models', 'views'])}.py::{case}"
        if name in seen:
            continue
        seen.add(name)
        outcome = "PASSED" if rng.random() < 0.93 else rng.choice(["SKIPPED (needs network)", "SKIPPED (slow)", "XFAIL"])
        lines.append(f"{name} {outcome}")
    total = len(lines)
    lines = [f"{line} [{round(100 * (i + 1) / total):3d}%]" for i, line in enumerate(lines)]
    tail = ["=================================== FAILURES ===================================",
            "    def test_case(client):", ">       assert result == expected", "E       AssertionError: values differ",
            "=============================== warnings summary ===============================",
            "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html",
            "=========================== short test summary info ============================"]
    return title, [("meta", head), ("lines", lines), ("lines", tail)]


BUILDERS: dict[str, Callable[[random.Random, Ctx, int, _Claims], tuple[str, list[Block]]]] = {
    "report": _report, "meeting": _meeting, "readme": _readme, "log": _log, "json": _json, "tests": _tests}


# -- planning and rendering ---------------------------------------------------------------


@dataclass
class Fact:
    kind: FactKind
    slots: dict[str, Any]
    position: str  # start, middle, end, last, or "any" for a near miss
    asked: bool
    of: str = ""  # a near miss: the question it imitates
    sentence: str = ""  # as rendered (set by _render)


@dataclass
class _Plan:
    ctx: Ctx
    facts: list[Fact] = field(default_factory=list)


class _Claims:
    """Each kind's anchors and each statement used once in the whole set."""

    def __init__(self) -> None:
        self.anchors: set[tuple[str, ...]] = set()  # membership only
        self.statements: set[str] = set()

    def take(self, kind: FactKind, slots: dict[str, Any]) -> bool:
        key = (kind.name, *(str(slots[a]) for a in kind.anchors))
        statement = normalise(fill(kind.statement, slots))
        if key in self.anchors or statement in self.statements:
            return False
        self.anchors.add(key)
        self.statements.add(statement)
        return True


def _draw_fact(rng: random.Random, kind: FactKind, ctx: Ctx, claims: _Claims, keep: dict[str, Any] | None = None) -> dict[str, Any] | None:
    for _ in range(60):
        slots = {**ctx.slots(), "at": ctx.at}
        slots.update(kind.draw(rng, slots))
        if keep:
            slots.update(keep)
        if claims.take(kind, slots):
            return slots
    return None


def _ctx(rng: random.Random, genre: str, at: datetime, used_branches: set[tuple[str, str]]) -> Ctx:
    project = rng.choice(PROJECTS)
    branch = "main"
    for _ in range(100):
        branch = rng.choice(BRANCHES).format(a=rng.randint(1, 9), b=rng.randint(0, 30), n=rng.randint(100, 9999), word=rng.choice(BRANCH_WORDS))
        if (project, branch) not in used_branches:
            break
    used_branches.add((project, branch))
    variant = rng.choice(["deployments", "buckets", "certs", "users"]) if genre == "json" else ""
    return Ctx(genre, at, project, rng.choice(TEAMS), rng.sample(PEOPLE, rng.randint(3, 6)), rng.choice(SUFFIXES),
               rng.choice(NAMESPACES), branch, rng.choice(REGIONS), rng.choice(ENVS), variant)


def _kinds_for(ctx: Ctx) -> list[FactKind]:
    return [k for k in KINDS if k.genre == ctx.genre and (not k.variant or k.variant == ctx.variant)]


def generate(seed: int = 0, documents: int = 96, words: tuple[int, int] = WORDS, start: datetime | None = None,
             days: int = 300) -> DocumentSet:
    """``documents`` documents with their questions; the same arguments give the same output."""
    rng = random.Random(f"lodviz-documents:{seed}:{documents}")
    start = start or datetime(2023, 1, 9, tzinfo=UTC) + timedelta(days=rng.randint(0, 500))
    ats = sorted(start + timedelta(minutes=rng.randint(0, days * 24 * 60)) for _ in range(documents))
    genres = [GENRES[i % len(GENRES)] for i in range(documents)]
    rng.shuffle(genres)
    claims = _Claims()
    used_branches: set[tuple[str, str]] = set()
    plans = [_Plan(_ctx(rng, g, at, used_branches)) for g, at in zip(genres, ats)]
    for plan in plans:
        ctx = plan.ctx
        kinds = _kinds_for(ctx)
        fixed = [k for k in kinds if k.fixed]
        free = [k for k in kinds if not k.fixed]
        n = rng.choice([1, 2, 2, 3, 3])
        chosen: list[tuple[FactKind, str]] = []
        if fixed:  # a pytest run: its platform and summary lines are always there, asked or not
            asked_fixed = [k for k in fixed if rng.random() < 0.45]
            chosen += [(k, k.fixed) for k in asked_fixed]
            n = max(0, n - len(asked_fixed))
        pool = free if not ctx.variant else free * 3  # a JSON listing may be asked about several of its records
        picks = rng.sample(pool, min(n, len(pool)))
        positions = sorted(rng.sample(["start", "middle", "end"], len(picks)), key=POSITIONS.index)
        if positions and not any(p == "last" for _, p in chosen) and rng.random() < LAST_P:
            positions[-1] = "last"
        if ctx.genre == "tests":  # a pytest run ends with its summary line: what is asked sits before it
            positions = [p if p != "last" else "end" for p in positions]
        chosen += list(zip(picks, positions))
        for kind, position in chosen:
            slots = _draw_fact(rng, kind, ctx, claims)
            if slots is not None:
                plan.facts.append(Fact(kind, slots, position, True))
        for kind in fixed:
            if not any(f.kind is kind for f in plan.facts):
                slots = _draw_fact(rng, kind, ctx, claims)
                if slots is None:
                    raise RuntimeError(f"no free {kind.name} fact for {ctx.project} on {ctx.branch}")
                plan.facts.append(Fact(kind, slots, kind.fixed, False))
    # near misses: the same kind of fact about something else, in another document of the genre
    for i, plan in enumerate(plans):
        for fact in list(plan.facts):
            if not fact.asked or fact.kind.fixed or rng.random() >= NEAR_MISS_P:
                continue
            hosts = [j for j, p in enumerate(plans) if j != i and p.ctx.genre == plan.ctx.genre
                     and p.ctx.variant == plan.ctx.variant and p.ctx.project != plan.ctx.project]
            if not hosts:
                continue
            other = plans[rng.choice(hosts)]
            keep = {k: fact.slots[k] for k in fact.kind.keep}
            slots = _draw_fact(rng, fact.kind, other.ctx, claims, keep)
            if slots is not None:
                other.facts.append(Fact(fact.kind, slots, "any", False, of=f"{i}:{plan.facts.index(fact)}"))
    return _assemble(rng, seed, plans, words, claims)


def _assemble(rng: random.Random, seed: int, plans: list[_Plan], words: tuple[int, int], claims: _Claims) -> DocumentSet:
    docs: list[Document] = []
    questions: list[DocQuestion] = []
    near: list[dict[str, str]] = []
    ids: dict[str, str] = {}  # "plan:fact" -> qid
    for i, plan in enumerate(plans):
        ctx = plan.ctx
        target = int(math.exp(rng.uniform(math.log(words[0]), math.log(words[1]))))
        title, blocks = BUILDERS[ctx.genre](rng, ctx, target, claims)
        text = _render(rng, ctx, blocks, plan.facts)
        doc_id = f"doc-{seed}-{i}"
        source = {"report": f"reports/{ctx.slug}-{ctx.at:%Y-%m}.md", "meeting": f"notes/{ctx.team.replace(' ', '-')}-{ctx.at:%Y-%m-%d}.md",
                  "readme": f"{ctx.slug}/README.md"}.get(ctx.genre, f"tool:{title}")
        docs.append(Document(doc_id, KIND_OF[ctx.genre], ctx.genre, title, source, text, ctx.at))
        for j, fact in enumerate(plan.facts):
            if not fact.asked:
                continue
            qid = f"docs-{seed}-q{len(questions) + 1}"
            ids[f"{i}:{j}"] = qid
            questions.append(DocQuestion(qid, fill(rng.choice(fact.kind.questions), fact.slots), doc_id, fact.sentence,
                                         fact.position, fill(fact.kind.answer, fact.slots), ctx.genre, fact.kind.name))
    for i, plan in enumerate(plans):
        for fact in plan.facts:
            if fact.of:
                near.append({"doc_id": docs[i].doc_id, "sentence": fact.sentence, "of": ids.get(fact.of, "")})
    return DocumentSet(f"docs-{seed}", docs, questions, near)


def _render(rng: random.Random, ctx: Ctx, blocks: list[Block], facts: list[Fact]) -> str:
    """The document's text with its facts put in place (each fact's ``sentence`` set to its rendered form)."""
    eligible = [(b, i) for b, (style, items) in enumerate(blocks) if style in ("para", "lines", "bullets")
                for i in range(len(items))]
    n = len(eligible)
    spans = {"start": (0.0, 0.15), "middle": (0.35, 0.65), "end": (0.75, 0.95), "any": (0.05, 0.95)}
    inserts: list[tuple[int, int, int]] = []  # (block, index, fact)
    last: list[int] = []
    for f, fact in enumerate(facts):
        if fact.position == "last":
            last.append(f)
            continue
        if ctx.genre == "tests" and fact.kind.fixed == "start":
            inserts.append((0, 2, f))  # right under "test session starts"
            continue
        lo, hi = spans[fact.position]
        k = rng.randint(int(lo * n), max(int(lo * n), int(hi * n) - 1))
        b, i = eligible[min(k, n - 1)]
        inserts.append((b, i, f))
    items = [list(it) for _, it in blocks]
    for b, i, f in sorted(inserts, key=lambda x: (x[0], x[1], x[2]), reverse=True):
        items[b].insert(i, facts[f])
    final = max(b for b, (style, _) in enumerate(blocks) if style in ("para", "lines", "bullets"))
    for f in last:
        items[final].append(facts[f])
    if final != len(blocks) - 1:
        raise RuntimeError("a document must end with a block that can hold a fact")
    stamp = ctx.at
    out: list[str] = []
    for (style, _), entries in zip(blocks, items):
        texts = []
        for entry in entries:
            if isinstance(entry, Fact):
                sentence = fill(entry.kind.statement, entry.slots)
            else:
                sentence = str(entry)
            if ctx.genre == "log" and not sentence.startswith("$ "):
                stamp += timedelta(seconds=rng.randint(1, 240), milliseconds=rng.randint(0, 999))
                sentence = f"{stamp:%Y-%m-%dT%H:%M:%S}.{stamp.microsecond // 1000:03d}Z {sentence}"
            if isinstance(entry, Fact):
                entry.sentence = sentence
            texts.append(sentence)
        if style in ("heading", "lines", "meta"):
            out.append("\n".join(texts))
        elif style == "para":
            out.append(" ".join(texts))
        elif style == "bullets":
            out.append("\n".join(f"- {t}" for t in texts))
        else:
            out.append("```\n" + "\n".join(texts) + "\n```")
    joiner = "\n" if ctx.genre in ("log", "json", "tests") else "\n\n"
    return joiner.join(out) + "\n"


# -- checks and stats ---------------------------------------------------------------------


def check(ds: DocumentSet) -> list[str]:
    """Problems with a document set (an empty list when all is well)."""
    problems = []
    texts = {d.doc_id: normalise(d.text) for d in ds.documents}
    for q in ds.questions:
        needle = normalise(q.sentence)
        holders = [doc_id for doc_id, text in texts.items() if needle in text]
        if holders != [q.doc_id]:
            problems.append(f"{q.qid}: its sentence is in {holders}, not only in {q.doc_id}")
        elif texts[q.doc_id].count(needle) != 1:
            problems.append(f"{q.qid}: its sentence is twice in {q.doc_id}")
        if split_sentences(q.sentence) != [needle]:
            problems.append(f"{q.qid}: its sentence splits into {split_sentences(q.sentence)}")
        if needle in normalise(q.text):
            problems.append(f"{q.qid}: the question holds its sentence")
        if q.category == "last" and not texts[q.doc_id].endswith(needle):
            problems.append(f"{q.qid}: not the last sentence of {q.doc_id}")
        if q.category not in POSITIONS:
            problems.append(f"{q.qid}: unknown category {q.category}")
    return problems


def stats(ds: DocumentSet) -> dict[str, Any]:
    lengths = sorted(len(d.text.split()) for d in ds.documents)
    by_genre: dict[str, int] = {g: 0 for g in GENRES}
    for d in ds.documents:
        by_genre[d.genre] += 1
    cats: dict[str, int] = {p: 0 for p in POSITIONS}
    for q in ds.questions:
        cats[q.category] += 1
    return {
        "id": ds.id,
        "documents": len(ds.documents),
        "by_genre": by_genre,
        "words": {"min": lengths[0], "median": lengths[len(lengths) // 2], "max": lengths[-1], "total": sum(lengths)},
        "chars": sum(len(d.text) for d in ds.documents),
        "questions": len(ds.questions),
        "categories": cats,
        "near_misses": len(ds.near_misses),
        "first": ds.documents[0].at.isoformat(),
        "last": ds.documents[-1].at.isoformat(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate long synthetic documents and tool outputs, and print a sample.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--documents", type=int, default=96)
    parser.add_argument("--json", default=None, help="write the set to this file")
    parser.add_argument("--show", type=int, default=12, help="questions to print")
    args = parser.parse_args(argv)
    ds = generate(args.seed, args.documents)
    print(json.dumps(stats(ds), indent=1))
    problems = check(ds)
    print(f"{len(problems)} problems" + (": " + "; ".join(problems[:5]) if problems else ""))
    rng = random.Random(1)
    index = {d.doc_id: d for d in ds.documents}
    for q in rng.sample(ds.questions, min(args.show, len(ds.questions))):
        d = index[q.doc_id]
        print(f"\n[{q.genre}/{q.category}] {q.text}  -> {q.answer}\n    {d.doc_id} {d.title!r} ({len(d.text.split())} words)\n    {q.sentence}")
    if args.json:
        with open(args.json, "w") as handle_:
            handle_.write(to_json(ds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
