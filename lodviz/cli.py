"""The ``lodviz`` command line.

Every command opens the store given by ``--store`` (or ``$LODVIZ_STORE``,
default ``./lodviz.duckdb``), calls the ``Memory`` service and prints. Errors
the library raises on purpose, and a file or directory the system refuses
(``OSError``), become one line on stderr and exit status 1. Text from the
store is printed through ``lodviz.terminal``: escape sequences in a memory show
as ``\\x1b[2J`` and do nothing to the terminal.
"""

from __future__ import annotations

import csv
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

import lodviz
from lodviz.access import current_face, set_face
from lodviz.audit import FLOOR_MOVES, RETRIEVING, summarise
from lodviz.errors import LodvizError
from lodviz.export import atlas_command, atlas_frame, write_atlas
from lodviz.ingest.importers import FORMATS, read_path
from lodviz.ingest.inputs import UNOWNED
from lodviz.memory import Memory, Result
from lodviz.params import DEFAULT_BUDGET_ARG, PRESETS, BudgetArg, Params
from lodviz.scoring import Tier
from lodviz.serve import DEFAULT_HOST, DEFAULT_PORT, prepare_demo, serve
from lodviz.settings import COMPRESSORS, DEFAULT_STORE, Settings
from lodviz.store.postgres import is_postgres_url
from lodviz.terminal import json_text, visible
from lodviz.times import iso

TIER_COLOURS = {Tier.FULL: "green", Tier.SUMMARY: "cyan", Tier.HEADLINE: "white"}


class _Group(click.Group):
    """Turns lodviz's own errors, and the system's refusals, into one line and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LodvizError as exc:
            _fail(ctx, str(exc))
        except OSError as exc:  # a path that is not there, a directory it may not write, a full disk
            _fail(ctx, _os_error(exc))
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)


def _fail(ctx: click.Context, message: str) -> None:
    """``Error: message`` on one line of stderr (a newline in it is written ``\\n``), exit status 1."""
    click.secho(f"Error: {visible(message.strip(), one_line=True)}", fg="red", err=True)
    ctx.exit(1)


def _os_error(exc: OSError) -> str:
    """One sentence for an ``OSError``: what the system refused, and the path it refused."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    if exc.filename is None:
        return f"{reason}."
    return f"cannot use {exc.filename}: {reason}."


def _say(message: object = "", **style: Any) -> None:
    """``click.secho`` for anything that may hold stored text: control characters are shown, not obeyed."""
    click.secho(visible(message), **style)


def _field(value: object) -> str:
    """Stored text that sits inside a line of output: a newline in it would break the line, so it is written ``\\n``."""
    return visible(value, one_line=True)


#: The largest number a BIGINT (DuckDB, PostgreSQL) holds: a LIMIT or an id past it is refused by the database.
MAX_BIGINT = 2**63 - 1
MAX_PORT = 65535


def _check_whole(value: int | None, name: str, least: int, most: int | None = None) -> None:
    """``InvalidParameters`` for an integer option outside ``least`` .. ``most`` (``value`` None: not given)."""
    if value is None or (least <= value and (most is None or value <= most)):
        return
    span = f"at least {least}" if most is None else f"from {least} to {most}"
    raise lodviz.InvalidParameters(f"{name} must be a whole number {span}, got {value}.")


def _check_model(model: str | None) -> None:
    """``hash:N`` needs N of at least 2 (``HashEmbedder`` raises a bare ValueError for less)."""
    if model and model.startswith("hash:"):
        size = model.partition(":")[2]
        if size.isdigit() and int(size) < 2:
            raise lodviz.InvalidParameters(f"the test embedder needs at least 2 dimensions (hash:2 or more), got {model!r}.")


class CliContext:
    """One ``lodviz`` invocation: its settings, and the store it opened (once, lazily)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._memory: Memory | None = None

    @property
    def store(self) -> str:
        return self.settings.store

    def open_store(self, **options: Any) -> Memory:
        # "openai" reads its endpoint from LODVIZ_LLM_*; a missing base URL or
        # model is a CompressorError, so one line and exit status 1.
        return lodviz.open(
            self.settings.store, model=self.settings.model, actor="cli", compressor=self.settings.compressor,
            matrix=self.settings.matrix, **options,
        )

    def open(self, *, must_exist: bool = False, read_only: bool = False) -> Memory:
        if self._memory is None:
            if must_exist and self.store != ":memory:" and not is_postgres_url(self.store) and not Path(self.store).exists():
                raise lodviz.StoreError(
                    f"no store at {self.store}; create one with `lodviz ingest` or pass --store."
                )
            self._memory = self.open_store(read_only=read_only)
        return self._memory

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()


pass_session = click.make_pass_decorator(CliContext)


@click.group(cls=_Group)
@click.option(
    "--store",
    envvar="LODVIZ_STORE",
    default=DEFAULT_STORE,
    show_default=True,
    help="The store: a DuckDB file, or a postgresql:// URL without a password (the password from PGPASSWORD, ~/.pgpass or a service file) (env LODVIZ_STORE).",
)
@click.option(
    "--model",
    envvar="LODVIZ_EMBEDDING_MODEL",
    default=None,
    help="A sentence-transformers model name or path (default: bundled all-MiniLM-L6-v2); hash or hash:N is the deterministic test embedder.",
)
@click.option(
    "--compressor",
    envvar="LODVIZ_COMPRESSOR",
    type=click.Choice(COMPRESSORS, case_sensitive=False),
    default="extractive",
    show_default=True,
    help="How new memories get their summary and headline: offline extraction, or an "
    "OpenAI-compatible LLM endpoint set by LODVIZ_LLM_BASE_URL, LODVIZ_LLM_MODEL and "
    "LODVIZ_LLM_API_KEY (or OPENAI_API_KEY) (env LODVIZ_COMPRESSOR).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what lodviz does to stderr.")
@click.version_option(lodviz.__version__, prog_name="lodviz")
@click.pass_context
def cli(ctx: click.Context, store: str, model: str | None, compressor: str, verbose: bool) -> None:
    """LOD memory for AI agents: every memory at three resolutions, a query as the camera."""
    if verbose:
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    _refuse_password_flag(ctx, store)
    previous = current_face()
    set_face("cli")
    # Back to the caller's face when the command ends: a process that runs commands in-process
    # (click's CliRunner, a notebook) must not audit its later library calls as "cli".
    ctx.call_on_close(lambda: set_face(previous))
    session = CliContext(Settings.resolve(store=store, model=model, compressor=compressor))
    _check_model(session.settings.model)
    ctx.obj = session
    ctx.call_on_close(session.close)


def _refuse_password_flag(ctx: click.Context, store: str | None) -> None:
    """A password in --store would show in ``ps`` to every user of the machine."""
    from click.core import ParameterSource

    if store and is_postgres_url(store) and ctx.get_parameter_source("store") == ParameterSource.COMMANDLINE:
        from urllib.parse import urlsplit

        if urlsplit(store).password:
            raise click.UsageError(
                "a password in --store shows in `ps` to every user of this machine; give the URL without it and "
                "put the password in PGPASSWORD, ~/.pgpass or a service file (or the whole URL in LODVIZ_STORE)."
            )


# -- shared options ------------------------------------------------------------


def _param_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option("--alpha", type=float, help="Weight of similarity vs recency, 0-1."),
            click.option("--lambda", "lam", type=float, help="Decay rate per day."),
            click.option("--theta1", type=float, help="Score for FULL."),
            click.option("--theta2", type=float, help="Score for SUMMARY."),
            click.option("--theta3", type=float, help="Score for HEADLINE."),
            click.option("-k", "--k", "k", type=int, help="How many nearest memories to consider."),
            click.option("--preset", type=click.Choice(sorted(PRESETS)), help="Start from a preset."),
        ]
    ):
        func = option(func)
    return func


def _params(mem: Memory, agent: str | None, preset: str | None, **values: Any) -> Params:
    base = lodviz.preset(preset) if preset else mem.profile(agent)
    return base.with_(**values)


def _echo_json(data: Any) -> None:
    click.echo(json_text(data, indent=2))


def _is_terminal() -> bool:
    return sys.stdout.isatty()


def _echo_text(text: str) -> None:
    """Text an agent reads, exactly, into a pipe or file; on a terminal its control characters are shown, not obeyed."""
    click.echo(visible(text) if _is_terminal() else text, nl=False)


# -- writing -----------------------------------------------------------------------


@cli.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--agent", "agent_id", envvar="LODVIZ_AGENT",
              help="agent_id for records that have none (env LODVIZ_AGENT, as for `lodviz mcp`).")
@click.option("--kind", help="kind for records that have none.")
@click.option("--visibility", type=click.Choice(["private", "shared"]),
              help="Visibility for records that have none (default: private with --agent, else shared).")
@click.option("--batch-size", default=256, show_default=True, help="Memories per transaction.")
@click.option("--embed", "embed_field", type=click.Choice(["summary", "full"]), help="Which text a new store embeds (default summary).")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              default="auto", show_default=True, help="What PATH holds; auto tells by its contents.")
@pass_session
def ingest(
    session: CliContext, path: Path, agent_id: str | None, kind: str | None, visibility: str | None, batch_size: int,
    embed_field: str | None, fmt: str,
) -> None:
    """Import memories: lodviz JSONL or CSV, a Claude Code, Codex CLI or Gemini CLI transcript, an OpenAI
    message list, a ChatGPT export (conversations.json), a folder of Markdown notes or wiki pages, or another
    memory system's export (mem0's get_all JSON, a MemPalace palace, a Letta agent file).

    The whole input is validated first; a bad record stops the import with its
    file and line and nothing is written. Running it again adds only what is new.
    Without --agent what is imported is shared, so that every agent (the one
    your MCP client names among them) finds it; with --agent it is that agent's.
    """
    defaults = {k: v for k, v in {"agent_id": agent_id, "kind": kind, "visibility": visibility, UNOWNED: "shared"}.items() if v}
    parsed = read_path(path, fmt, defaults)
    for note in parsed.skipped:
        _say(f"Skipped {_field(note)}.", err=True)
    records = parsed.records
    if not records:
        raise lodviz.InvalidInput(f"{path} holds no memories.")
    if batch_size < 1:
        raise lodviz.InvalidParameters("--batch-size must be at least 1.")
    if embed_field:
        mem = session.open_store(embed_field=embed_field)
        session._memory = mem
    else:
        mem = session.open()
    from tqdm import tqdm

    with tqdm(total=len(records), unit="mem", desc="ingest", file=sys.stderr, disable=len(records) < 50) as bar:
        report = mem.add_many(records, batch_size=batch_size, progress=bar.update)
    _say(f"Added {len(report.added)} memories, skipped {report.skipped} duplicates; the store holds {len(mem)}.")


@cli.command()
@click.argument("path", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--agent", "agent_id", envvar="LODVIZ_AGENT",
              help="agent_id for records that have none (env LODVIZ_AGENT); without it what is imported is shared.")
@click.option("--interval", default=5.0, show_default=True, help="Seconds between looks at the folder.")
@click.option("--once", is_flag=True, help="Look once and stop (for cron, or to catch up).")
@click.option("--pattern", default="**/*.jsonl", show_default=True, help="Which files under PATH are transcripts.")
@pass_session
def watch(session: CliContext, path: Path, agent_id: str | None, interval: float, once: bool, pattern: str) -> None:
    """Keep the store up to date with a folder of transcripts as they grow (Ctrl-C stops).

    Every file under PATH matching --pattern (Claude Code keeps one per session
    under ~/.claude/projects/) is imported when it changes; only new turns are
    added, and a half-written last line waits for the next look.
    """
    import time as _time

    from lodviz.ingest.importers import read_path

    if interval <= 0:
        raise lodviz.InvalidParameters("--interval must be a positive number of seconds.")
    mem = session.open()
    defaults = {"agent_id": agent_id} if agent_id else {UNOWNED: "shared"}
    seen: dict[Path, tuple[float, int]] = {}
    while True:
        for file in sorted(path.glob(pattern)):
            try:
                stat = file.stat()
            except OSError:
                continue
            mark = (stat.st_mtime, stat.st_size)
            if seen.get(file) == mark:
                continue
            try:
                parsed = read_path(file, "auto", defaults)
                report = mem.add_many(parsed.records) if parsed.records else None
            except lodviz.LodvizError as exc:  # one bad file does not stop the watch
                _say(f"{_field(file.relative_to(path))}: {_field(exc)}", err=True)
                seen[file] = mark
                continue
            seen[file] = mark
            added = len(report.added) if report else 0
            if added:
                _say(f"{_field(file.relative_to(path))}: added {added} memories; the store holds {len(mem)}.")
        if once:
            return
        _time.sleep(interval)


@cli.command()
@click.argument("text")
@click.option("--agent", "agent_id", default="default", show_default=True)
@click.option("--kind", default="note", show_default=True)
@click.option("--visibility", type=click.Choice(["private", "shared"]), default="private", show_default=True)
@click.option("--source")
@click.option("--created-at", help="ISO 8601 time (default now).")
@pass_session
def add(session: CliContext, text: str, agent_id: str, kind: str, visibility: str, source: str | None, created_at: str | None) -> None:
    """Store one memory (a text already stored is not stored again: the answer names its memory)."""
    mem = session.open()
    record, duplicate = mem.write(
        text, actor=mem.actor, agent_id=agent_id, kind=kind, visibility=visibility, source=source, created_at=created_at
    )
    if duplicate:
        _say(f"Already stored as memory {record.id}; nothing new was stored: {_field(record.headline)}")
    else:
        _say(f"Stored memory {record.id}: {_field(record.headline)}")


# -- reading -------------------------------------------------------------------------


def _print_result(result: Result, headlines: int, show_scores: bool = True) -> None:
    counts = result.counts
    title = f"{result.mode}" + (f" {result.query!r}" if result.query else "")
    click.echo(
        click.style(_field(title), bold=True)
        + f"  agent={_field(result.agent_id or 'all')}  now={iso(result.now)}"
        + f"  alpha={result.params.alpha} lambda={result.params.lam} "
        + f"θ=({result.params.theta1}, {result.params.theta2}, {result.params.theta3}) k={result.params.k}"
    )
    if result.exclude:
        _say(f"excluding: {_field(', '.join(result.exclude))}")
    tokens = (
        f"{result.tokens:,} tokens ({result.tokenizer}) of a {result.budget_tokens:,} budget"
        if result.counted_tokens is not None and result.budget_tokens
        else f"~{result.tokens:,} tokens"
    )
    _say(
        f"{counts['FULL']} full · {counts['SUMMARY']} summaries · {counts['HEADLINE']} headlines"
        f"  ({tokens}; {result.candidates} candidates)"
    )
    for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE):
        items = result.by_tier(tier)
        if not items:
            continue
        _say()
        _say(f"── {tier.name} ({len(items)}) " + "─" * 40, fg=TIER_COLOURS[tier], bold=True)
        shown = items if tier != Tier.HEADLINE else items[:headlines]
        for item in shown:
            scores = (
                f" S={item.similarity:.2f} D={item.decay:.2f} L={item.score:.2f}"
                + (f" −{item.penalty:.2f}" if item.penalty else "")
                if show_scores
                else ""
            )
            meta = _field(f"[{item.id}] {item.agent_id} · {item.kind} · {item.created_at.date()}{scores}")
            if item.floor > Tier.OUT:
                meta += f" · floor {item.floor.name}"
            if tier == Tier.HEADLINE:
                click.echo(f"  {click.style(meta, dim=True)}  {_field(item.content)}")
            else:
                click.echo(click.style(meta, dim=True))
                _say(_indent(visible(item.content)))
        if len(shown) < len(items):
            _say(f"  … {len(items) - len(shown)} more headlines (--headlines N to show more)", dim=True)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@cli.command()
@click.argument("query")
@click.option("--agent", "agent_id", help="Search as this agent (its profile and visibility).")
@_param_options
@click.option("--exclude", "-x", multiple=True, help="A topic to push away (repeatable).")
@click.option("--budget", "budget_tokens", type=int, help="Token budget the result must fit.")
@click.option("--now", help="Score as of this ISO 8601 time.")
@click.option("--as-of", "as_of", help="Ask the store as it was at this ISO 8601 time (counts nothing, audits nothing).")
@click.option("--no-touch", is_flag=True, help="Look without counting a retrieval.")
@click.option("--headlines", default=25, show_default=True, help="Headlines to print.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--text", "as_text", is_flag=True,
              help="Print exactly the text an agent receives: within --budget, else the agent's default budget (as over MCP).")
@click.option("--whole-landscape", is_flag=True, help="With --text: every memory in range, no budget.")
@pass_session
def search(session: CliContext, query: str, agent_id: str | None, preset: str | None, exclude: tuple[str, ...], budget_tokens: int | None, now: str | None, as_of: str | None, no_touch: bool, headlines: int, as_json: bool, as_text: bool, whole_landscape: bool, **values: Any) -> None:
    """Search: the k nearest memories, each at its tier."""
    mem = session.open(must_exist=True)
    params = _params(mem, agent_id, preset, **values)
    # The text an agent reads keeps to its budget, as an MCP search does; the landscape a person reads is whole.
    budget: BudgetArg = budget_tokens
    if budget is None and as_text and not whole_landscape:
        budget = DEFAULT_BUDGET_ARG
    result = mem.search(query, agent_id=agent_id, params=params, exclude=list(exclude), budget_tokens=budget, now=now,
                        touch=not no_touch, as_of=as_of)
    if as_json:
        _echo_json(result.to_dict())
    elif as_text:
        _echo_text(result.render())
    else:
        _print_result(result, headlines)


def _whole_number(least: int) -> Callable[[click.Context, click.Parameter, str | None], int | None]:
    """An option's value as a whole number of at least ``least``, refused in one line (click's own refusal is a usage block)."""

    def convert(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
        if value is None:
            return None
        text = value.strip()
        number = int(text) if text.lstrip("-").isdigit() and text.count("-") <= 1 else None
        if number is None or number < least:
            raise lodviz.InvalidParameters(f"--{param.name} must be a whole number of at least {least}, got {value!r}.")
        return number

    return convert


@cli.command()
@click.argument("memory_id")
@click.option("--agent", "agent_id", help="Act as this agent.")
@click.option("--around", help="A phrase from an excerpt: print only the passage holding it (or the nearest) and its neighbours.")
@click.option("--width", metavar="N", callback=_whole_number(0), help="With --around: passages on each side (default 1).")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def expand(session: CliContext, memory_id: str, agent_id: str | None, around: str | None, width: int | None, as_json: bool) -> None:
    """Print one memory in full, or with --around one passage's neighbourhood (counts as a retrieval)."""
    if width is not None and around is None:
        raise lodviz.InvalidInput("--width needs --around: it counts passages on each side of the phrase.")
    mem = session.open(must_exist=True)
    if around is not None:
        part = mem.expand_passage(memory_id, around, width=1 if width is None else width, agent_id=agent_id)
        if as_json:
            _echo_json(part.to_dict())
            return
        first, last = part.positions[0] + 1, part.positions[-1] + 1
        which = f"passage {first}" if first == last else f"passages {first}–{last}"
        found = "holding it" if part.matched == "phrase" else "nearest to it (no passage holds it)"
        _say(f"[{part.memory_id}] {_field(part.record.headline)}", bold=True)
        _say(f"{which} of {part.count} around “{_field(part.around)}”: the one {found} and {part.width} on each side; "
             f"{part.before} left out before, {part.after} after · retrieved {part.record.retrieval_count}×")
        _say()
        _say(part.text)
        return
    record = mem.expand(memory_id, agent_id=agent_id)
    if as_json:
        _echo_json(record.to_dict())
        return
    _say(f"[{record.id}] {_field(record.headline)}", bold=True)
    _say(
        f"agent {_field(record.agent_id)} ({record.visibility}) · {_field(record.kind)} · source {_field(record.source or '-')} · "
        f"created {iso(record.created_at)} · retrieved {record.retrieval_count}× "
        f"(last {iso(record.last_retrieved_at) or 'never'}) · floor {Tier(record.floor).name}"
    )
    _say("\nSummary", bold=True)
    _say(record.summary)
    _say("\nFull text", bold=True)
    _say(record.text)


def _floor_command(action: str) -> Callable[..., None]:
    @click.argument("memory_id")
    @click.option("--reason", "-r", help="Why (kept in the audit log).")
    @click.option("--agent", "agent_id", help="Act as this agent.")
    @click.option("--to", "to", type=click.Choice([t.name for t in Tier], case_sensitive=False), help="Set the floor to this tier directly.")
    @pass_session
    def command(session: CliContext, memory_id: str, reason: str | None, agent_id: str | None, to: str | None) -> None:
        mem = session.open(must_exist=True)
        change = mem.move_floor(memory_id, +1 if action == "promote" else -1, reason=reason, agent_id=agent_id, to=to)
        _say(f"Memory {change.memory_id} now has tier floor {change.after.name} (was {change.before.name}): {_field(change.headline)}")

    command.__doc__ = {
        "promote": "Raise a memory's tier floor to one tier above where it comes back now (FULL at most).",
        "demote": "Lower a memory's tier floor by one tier.",
    }[action]
    return command


cli.command(name="promote")(_floor_command("promote"))
cli.command(name="demote")(_floor_command("demote"))


@cli.command()
@click.argument("memory_id")
@click.argument("query", required=False)
@click.option("--agent", "agent_id")
@_param_options
@click.option("--now")
@pass_session
def explain(session: CliContext, memory_id: str, query: str | None, agent_id: str | None, preset: str | None, now: str | None, **values: Any) -> None:
    """Why a memory sits at its tier for QUERY (S, D, L, thresholds, floor)."""
    mem = session.open(must_exist=True)
    params = _params(mem, agent_id, preset, **values)
    placement = mem.explain(memory_id, query, agent_id=agent_id, params=params, now=now)
    record = mem.get(memory_id)
    _say(f"[{record.id}] {_field(record.headline)}", bold=True)
    _say(f"S = {placement.similarity:.4f}   D = {placement.decay:.4f}   L = {placement.score:.4f}")
    _say(placement.reason)


@cli.command()
@click.option("--all", "everything", is_flag=True, help="Resolved ones too, not only the open ones.")
@click.option("--memory", "memory_id", help="Only the conflicts of this memory.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--redetect", is_flag=True, help="First find the open candidates again with this version's detector (audited).")
@pass_session
def conflicts(session: CliContext, everything: bool, memory_id: str | None, as_json: bool, redetect: bool) -> None:
    """Memories that may contradict each other (found when they were written)."""
    mem = session.open(must_exist=True)
    if redetect:
        dropped, found_now = mem.redetect_conflicts()
        _say(f"Found {found_now} open conflict candidates again (replacing {dropped}); decided ones kept.", err=as_json)
    found = mem.conflicts(memory_id, status=None if everything else ("open",))
    if as_json:
        _echo_json([c.to_dict() for c in found])
        return
    if not found:
        _say("No conflicts" + ("." if everything else " are open."))
        return
    for c in found:
        newer, older = mem.get(c.memory_id), mem.get(c.other_id)
        _say(f"#{c.memory_id} vs #{c.other_id}: {_field(c.reason)}  [{c.status}]", bold=True)
        _say(f"  newer #{newer.id} ({newer.created_at.date()}): {_field(newer.headline)}")
        _say(f"  older #{older.id} ({older.created_at.date()}): {_field(older.headline)}")
        if c.status != "open":
            detail = f"superseded: #{c.superseded_id}" if c.superseded_id else "both stand"
            _say(f"  {detail}; by {_field(c.resolved_by)}" + (f": {_field(c.note)}" if c.note else ""))


@cli.command()
@click.argument("memory_id")
@click.argument("other_id")
@click.option("--superseded", help="The one of the two that no longer holds (default: both stand).")
@click.option("--reason", "-r", help="Why (kept in the audit log).")
@pass_session
def resolve(session: CliContext, memory_id: str, other_id: str, superseded: str | None, reason: str | None) -> None:
    """Decide a conflict: both memories stand, or one is superseded by the other (audited)."""
    resolved = session.open(must_exist=True).resolve_conflict(memory_id, other_id, superseded=superseded, reason=reason)
    what = f"#{resolved.superseded_id} is superseded" if resolved.superseded_id else "both stand"
    _say(f"Conflict #{resolved.memory_id} vs #{resolved.other_id}: {what}.")


@cli.command()
@click.argument("memory_id")
@click.option("--reason", "-r", required=True, help="Why (kept in the audit log), e.g. an erasure request.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@pass_session
def forget(session: CliContext, memory_id: str, reason: str, yes: bool) -> None:
    """Erase one memory's texts and vector for good (its id, usage and audit trail stay)."""
    mem = session.open(must_exist=True)
    record = mem.get(memory_id)
    if not yes:
        click.confirm(f"Forget #{record.id} ({_field(record.headline)})? This cannot be undone", abort=True)
    mem.forget(record.id, reason=reason)
    _say(f"Forgot memory {record.id}.")


@cli.command()
@click.option("--since", required=True, help="ISO 8601 start of the window.")
@click.option("--until", help="ISO 8601 end (default now).")
@click.option("--agent", "agent_id")
@click.option("--limit", type=int)
@click.option("--budget", "budget_tokens", type=int)
@click.option("--headlines", default=25, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_session
def recent(session: CliContext, since: str, until: str | None, agent_id: str | None, limit: int | None, budget_tokens: int | None, headlines: int, as_json: bool) -> None:
    """Memories created in a time window, tiered by how often they were used."""
    result = session.open(must_exist=True).recent(since, until, agent_id=agent_id, limit=limit, budget_tokens=budget_tokens)
    _echo_json(result.to_dict()) if as_json else _print_result(result, headlines, show_scores=False)


@cli.command()
@click.option("--agent", "agent_id")
@click.option("--limit", default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_session
def unseen(session: CliContext, agent_id: str | None, limit: int, as_json: bool) -> None:
    """Memories never retrieved."""
    result = session.open(must_exist=True).unseen(agent_id=agent_id, limit=limit)
    _echo_json(result.to_dict()) if as_json else _print_result(result, limit, show_scores=False)


@cli.command()
@click.option("-n", default=10, show_default=True, help="How many.")
@click.option("--agent", "agent_id")
@click.option("--seed", type=int)
@click.option("--json", "as_json", is_flag=True)
@pass_session
def sample(session: CliContext, n: int, agent_id: str | None, seed: int | None, as_json: bool) -> None:
    """Resurface memories at random, weighted towards the most faded."""
    _check_whole(seed, "--seed", 0)
    result = session.open(must_exist=True).sample(n, agent_id=agent_id, seed=seed)
    _echo_json(result.to_dict()) if as_json else _print_result(result, n, show_scores=False)


# -- facts -----------------------------------------------------------------------------


@cli.command()
@click.option("--query", "-q", "queries", multiple=True, help="Tier counts for this query (default: the store's demo queries).")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def stats(session: CliContext, queries: tuple[str, ...], as_json: bool) -> None:
    """Counts per agent and kind, the time span, and tier shapes per agent profile."""
    from lodviz.stats import store_stats

    data = store_stats(session.open(must_exist=True), list(queries) or None)
    if as_json:
        _echo_json(data)
        return
    _say(f"{data['store']}: {data['memories']} memories, {data['agents_count']} agents", bold=True)
    if data["memories"] == 0:
        return
    _say(f"created {data['span']['first']} … {data['span']['last']} ({data['span']['days']} days); now = {data['now']}")
    _say(f"embedding model {data['embedding_model']} ({data['embedding_dim']} dims, embeds the {data['embed_field']})")
    _say("\nMemories per agent and kind", bold=True)
    kinds = data["kinds"]
    header = f"{'agent':<22}" + "".join(f"{_field(k):>12}" for k in kinds) + f"{'shared':>9}{'total':>8}"
    _say(header)
    for agent, row in data["per_agent"].items():
        _say(f"{_field(agent):<22}" + "".join(f"{row['kinds'].get(k, 0):>12}" for k in kinds) + f"{row['shared']:>9}{row['total']:>8}")
    _say("\nUsage", bold=True)
    usage = data["usage"]
    _say(
        f"never retrieved {usage['never']} · retrieved {usage['retrieved']} (median {usage['median_count']}×, max {usage['max_count']}×)"
        f" · floors: {', '.join(f'{k} {v}' for k, v in usage['floors'].items()) or 'none'}"
    )
    for block in data["queries"]:
        _say(f"\nTier shapes for {_field(repr(block['query']))}", bold=True)
        _say(f"{'profile':<22}{'alpha':>7}{'lambda':>8}{'FULL':>7}{'SUMMARY':>9}{'HEADLINE':>10}{'OUT':>7}{'tokens':>9}")
        for row in block["profiles"]:
            c = row["counts"]
            _say(
                f"{_field(row['profile']):<22}{row['alpha']:>7.2f}{row['lambda']:>8.3f}{c['FULL']:>7}{c['SUMMARY']:>9}{c['HEADLINE']:>10}{c['OUT']:>7}{row['tokens']:>9}"
            )


@cli.command("index")
@click.argument("kind", required=False, type=click.Choice(["exact", "ivf"], case_sensitive=False))
@click.option("--rebuild", is_flag=True, help="Build the ivf index again from the memories stored now.")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def index_command(session: CliContext, kind: str | None, rebuild: bool, as_json: bool) -> None:
    """Show or choose how a search finds a query's nearest memories: exact (a scan) or ivf (an index).

    ivf reads only the groups of memories nearest the query: at 1M memories a
    few milliseconds instead of about a hundred, finding 99% of the exact
    1,000 nearest (measured on the store when it is built; shown here).
    """
    mem = session.open(must_exist=True)
    if kind is None and rebuild:
        kind = mem.vector_index()["index"]
    facts = mem.set_vector_index(kind.lower(), rebuild=rebuild) if kind else mem.vector_index()
    if as_json:
        _echo_json(facts)
        return
    _say(_index_line(facts))


def _index_line(facts: dict[str, Any]) -> str:
    if facts["index"] == "exact":
        return f"exact: a search scans all {facts['memories']:,} memories."
    if facts["index"] != "ivf":
        return f"{facts['index']}: the store's own index."
    if facts.get("matrix", "float32") != "float32" and "bytes" not in facts:
        return (f"ivf: chosen; this process holds the matrix as {facts['matrix']}, which the index does not cover: "
                "searches scan the compact copy (open it with the float32 matrix to use the index).")
    if "covers" not in facts:
        if facts["memories"] < facts.get("from", 0):
            return f"ivf: chosen; {facts['memories']:,} memories are scanned exactly until the store holds {facts['from']:,}."
        return "ivf: chosen; the index is made when the store is next opened to serve (or run `lodviz index ivf`)."
    built = f", made in {facts['seconds']:.1f} s" if "seconds" in facts else ""
    later = facts["memories"] - facts["covers"]
    tail = f"; {later:,} written since are scanned exactly" if later > 0 else ""
    size = f"; {facts['bytes'] / 2**20:,.0f} MiB in memory" if "bytes" in facts else "; kept beside the store, loaded when it is opened to serve"
    return (
        f"ivf: {facts['covers']:,} memories in {facts['lists']:,} groups, {facts['nprobe']:,} read per search; "
        f"recall {facts['recall']:.3f} of the exact 1,000 nearest (measured on this store){tail}{size}{built}."
    )


@cli.group(invoke_without_command=True)
@click.pass_context
def agents(ctx: click.Context) -> None:
    """Show agents and their profiles; `agents set` changes one."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(agents_show)


@agents.command("show")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def agents_show(session: CliContext, as_json: bool) -> None:
    """List agents with their memory counts and profiles."""
    mem = session.open(must_exist=True)
    rows = [agent.to_dict() for agent in mem.agents_overview()]
    if as_json:
        _echo_json(rows)
        return
    _say(f"{'agent':<22}{'memories':>9}{'alpha':>7}{'lambda':>8}{'theta1':>8}{'theta2':>8}{'theta3':>8}{'k':>7}{'budget':>8}")
    for row in rows:
        p = row["profile"]
        tag = "" if row["stored"] else "  (defaults)"
        _say(f"{_field(row['agent_id']):<22}{row['memories']:>9}{p['alpha']:>7.2f}{p['lam']:>8.3f}{p['theta1']:>8.2f}{p['theta2']:>8.2f}{p['theta3']:>8.2f}{p['k']:>7}{p['budget'] or 'all':>8}{tag}")
    _say("\npresets: " + "; ".join(f"{n} (alpha {p.alpha}, lambda {p.lam})" for n, p in PRESETS.items()))


@agents.command("set")
@click.argument("agent_id")
@_param_options
@click.option("--budget", type=int, help="Tokens the agent's searches return unless it asks otherwise (0: the whole landscape).")
@click.option("--reason", help="Why (kept in the audit log).")
@pass_session
def agents_set(session: CliContext, agent_id: str, preset: str | None, reason: str | None, **values: Any) -> None:
    """Set AGENT_ID's profile from a preset and/or values (recorded in the audit log)."""
    if not preset and all(v is None for v in values.values()):
        raise click.UsageError("give --preset or at least one of --alpha/--lambda/--theta1/--theta2/--theta3/--k/--budget.")
    params = session.open().set_profile(agent_id, preset, reason=reason, **values)
    _say(f"Profile of {_field(agent_id)}: " + ", ".join(f"{k}={v}" for k, v in params.to_dict().items()))


@cli.group()
def token() -> None:
    """Tokens for `lodviz serve --auth`: who may act as which agent, and who may steer.

    Roles: viewer (the landscape and the audit log), auditor (also promote,
    demote, expand, resolve conflicts, change profiles), agent (its own MCP
    calls as one agent, --agent NAME), admin (everything). Whoever can run
    this command on the store's machine manages tokens.
    """


@token.command("create")
@click.argument("name")
@click.option("--role", type=click.Choice(["viewer", "auditor", "agent", "admin"]), required=True)
@click.option("--agent", "agent_id", help="With --role agent: the agent the token acts for.")
@pass_session
def token_create(session: CliContext, name: str, role: str, agent_id: str | None) -> None:
    """Create a token for identity NAME; it is printed once and never kept (only its hash is)."""
    record, secret = session.open().create_token(name, role, agent_id=agent_id)
    who = f"{_field(record.name)} ({record.role}" + (f" for agent {_field(record.agent_id)})" if record.agent_id else ")")
    _say(f"Token {record.id} for {who}. It is shown only now; keep it secret:", err=True)
    click.echo(secret)


@token.command("list")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def token_list(session: CliContext, as_json: bool) -> None:
    """Every token: id, identity, role, agent, created, revoked (never the token)."""
    records = session.open(must_exist=True).tokens()
    if as_json:
        _echo_json([r.to_dict() for r in records])
        return
    _say(f"{'id':<10}{'name':<24}{'role':<9}{'agent':<18}{'created (UTC)':<18}revoked")
    for r in records:
        revoked = r.revoked_at.strftime("%Y-%m-%d %H:%M") if r.revoked_at else "-"
        _say(f"{r.id:<10}{_field(r.name[:23]):<24}{r.role:<9}{_field((r.agent_id or '-')[:17]):<18}{r.created_at:%Y-%m-%d %H:%M}  {revoked}")


@token.command("revoke")
@click.argument("token_id")
@pass_session
def token_revoke(session: CliContext, token_id: str) -> None:
    """Revoke a token: its identity is refused from the next request on (audited).

    While a `lodviz serve` holds a DuckDB store, the revocation goes through
    that server (which takes effect at once); otherwise the store is opened here.
    """
    from lodviz.serve import registry
    from lodviz.store.postgres import is_postgres_url

    if session.store != ":memory:" and not is_postgres_url(session.store) and Path(session.store).exists():
        entry = registry.live_entry(session.store)
        if entry is not None and entry.control:
            data = registry.revoke_through(entry, token_id, "cli")
            _say(f"Revoked token {data['id']} of {_field(data['name'])} ({data['role']}) through the server at {entry.url}.")
            return
    record = session.open(must_exist=True).revoke_token(token_id)
    _say(f"Revoked token {record.id} of {_field(record.name)} ({record.role}).")


@cli.group(invoke_without_command=True)
@click.pass_context
def golden(ctx: click.Context) -> None:
    """Golden queries: questions with the memories a good answer needs (what `tune` measures)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(golden_list)


@golden.command("list")
@click.option("--agent", "agent_id")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def golden_list(session: CliContext, agent_id: str | None, as_json: bool) -> None:
    """List the golden queries on record."""
    entries = session.open(must_exist=True).golden(agent_id)
    if as_json:
        _echo_json([g.to_dict() for g in entries])
        return
    if not entries:
        _say("No golden queries; add some with `lodviz golden import FILE`.")
    for g in entries:
        _say(f"[{g.id}] {_field(g.agent_id or '(auditor)')}: {_field(g.query)}  needs {', '.join(f'#{i}' for i in g.needs)}")


@golden.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@pass_session
def golden_import(session: CliContext, path: Path) -> None:
    """Import golden queries from a JSON Lines file (all or nothing; see lodviz.tuning)."""
    ids = session.open(must_exist=True).import_golden(path)
    _say(f"Imported {len(ids)} golden queries.")


@cli.command()
@click.option("--agent", "agent_id", help="Tune this agent's profile on its golden queries.")
@click.option("--budget", "budget_tokens", type=int, default=2000, show_default=True, help="Token budget of each search.")
@click.option("--save", is_flag=True, help="Save the suggested alpha and lambda as the agent's profile (audited).")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def tune(session: CliContext, agent_id: str | None, budget_tokens: int, save: bool, as_json: bool) -> None:
    """Sweep alpha and lambda on golden queries and suggest a setting."""
    mem = session.open(must_exist=True)
    result = mem.tune(agent_id, budget_tokens=budget_tokens)
    best = result.suggest()
    if as_json:
        _echo_json({"agent_id": agent_id, "budget": budget_tokens, "queries": result.queries, "current": result.current, "suggested": best,
                    "verdict": result.verdict(), "grid": result.rows})
    else:
        frame = result.frame()
        _say(f"{result.queries} golden queries of {_field(agent_id or 'all agents')}, {budget_tokens:,}-token budget", bold=True)
        _say("readable recall (FULL or SUMMARY) by alpha (rows) and lambda (columns):")
        table = frame.pivot(index="alpha", columns="lam", values="recall_readable")
        _say("  alpha  " + "".join(f"{lam:>8g}" for lam in table.columns))
        for alpha, row in table.iterrows():
            _say(f"  {alpha:5.2f}  " + "".join(f"{v:8.2f}" for v in row.tolist()))
        current = result.current or {}
        _say(
            f"current  alpha {result.base.alpha} lambda {result.base.lam}: readable {current.get('recall_readable', 0):.2f}, "
            f"any tier {current.get('recall_any', 0):.2f}"
        )
        _say(
            f"suggested alpha {best['alpha']} lambda {best['lam']}: readable {best['recall_readable']:.2f}, any tier {best['recall_any']:.2f}"
            + (" (the current profile)" if best.get("keep") else "")
        )
        _say(result.verdict())
    if save:
        if not agent_id:
            raise click.UsageError("--save needs --agent: profiles belong to agents.")
        if best.get("keep"):
            _say(f"Nothing saved: the profile of {_field(agent_id)} stays as it is.", err=as_json)
            return
        params = mem.set_profile(agent_id, result.suggested_params(), reason=f"lodviz tune on {result.queries} golden queries")
        _say(f"Saved: profile of {_field(agent_id)} is now alpha {params.alpha}, lambda {params.lam}.", err=as_json)


@cli.command()
@click.option("--output", "-o", type=click.Path(path_type=Path), help="File to write (default stdout; atlas needs one).")
@click.option(
    "--format", "fmt", type=click.Choice(["jsonl", "csv", "atlas"]), default="jsonl", show_default=True,
    help="atlas: a Parquet file for Apple's Embedding Atlas (texts, the store's map as x/y, tier, agent, times).",
)
@click.option("--agent", "agent_id", help="Only what this agent may see (atlas: tiered under its profile).")
@click.option(
    "--with-vectors", is_flag=True,
    help="atlas: also each memory's embedding (vector) and its 15 nearest exported memories (neighbors; exact, quadratic).",
)
@pass_session
def export(session: CliContext, output: Path | None, fmt: str, agent_id: str | None, with_vectors: bool) -> None:
    """Write every memory (texts, usage history, floor) as JSONL or CSV, which `ingest` reads back, or for Embedding Atlas.

    A file is written whole or not at all: into a temporary file beside it,
    renamed over OUTPUT once complete. JSON escapes every control character
    (values unchanged); CSV printed to a terminal shows them, not obeys them.

    --format atlas writes a Parquet file that `embedding-atlas OUTPUT --x x
    --y y --text text` opens: one row per memory with its texts, its place on
    the store's map, the tier the landscape gives it with no query (under the
    --agent's profile, else its own agent's), agent, kind, source, times (UTC),
    retrieval count and floor. The map must be fitted (`lodviz serve` does it).
    """
    if with_vectors and fmt != "atlas":
        raise lodviz.InvalidInput("--with-vectors is for --format atlas.")
    if fmt == "atlas":
        if output is None:
            raise lodviz.InvalidInput("--format atlas writes a Parquet file: name it with -o FILE.")
        frame = atlas_frame(session.open(must_exist=True), agent_id, with_vectors=with_vectors)
        write_atlas(frame, output)
        _say(f"Wrote {len(frame)} memories to {output}; open it with: {atlas_command(output, with_vectors)}", err=True)
        return
    rows = [record.to_dict() for record in session.open(must_exist=True).export_records(agent_id)]
    if output is None:
        _write_export(sys.stdout, rows, fmt, terminal=_is_terminal())
        return
    # A device, a pipe (/dev/stdout, a FIFO) or a link is written as it is; a file through a temporary one.
    direct = output.is_symlink() or (output.exists() and not output.is_file())
    target = output if direct else output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        # A CSV file opens in a spreadsheet: a byte-order mark says UTF-8 (ingest reads it back either way).
        with open(target, "w", encoding="utf-8-sig" if fmt == "csv" else "utf-8", newline="") as handle:
            _write_export(handle, rows, fmt, terminal=False)
        if not direct:
            os.replace(target, output)
    except OSError as exc:
        if not direct:
            target.unlink(missing_ok=True)
        raise lodviz.InvalidInput(f"cannot write {output}: {exc.strerror or exc}.") from None
    _say(f"Wrote {len(rows)} memories to {output}.", err=True)


def _write_export(handle: Any, rows: list[dict[str, Any]], fmt: str, *, terminal: bool) -> None:
    if fmt == "jsonl":
        for row in rows:
            handle.write(json_text(row) + "\n")
        return
    fields = list(rows[0]) if rows else ["text"]
    writer = csv.DictWriter(handle, fieldnames=fields)
    writer.writeheader()
    for row in rows:
        cells = {**row, "metadata": json_text(row["metadata"])}
        writer.writerow({k: visible(v) if isinstance(v, str) else v for k, v in cells.items()} if terminal else cells)


@cli.group(invoke_without_command=True)
@click.option("--agent", "agent_id")
@click.option("--action", "actions", multiple=True, help="Only these actions (repeatable).")
@click.option("--limit", default=30, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def audit(ctx: click.Context, agent_id: str | None, actions: tuple[str, ...], limit: int, as_json: bool) -> None:
    """The most recent audit events; `audit verify` checks the log against the data."""
    if ctx.invoked_subcommand is not None:
        return
    session = ctx.find_object(CliContext)
    assert session is not None
    _check_whole(limit, "--limit", 1, MAX_BIGINT)
    events = session.open(must_exist=True).audit(agent_id=agent_id, actions=list(actions) or None, limit=limit)
    if as_json:
        _echo_json([e.to_dict() for e in events])
        return
    for e in events:
        what = e.query or (f"memory {e.memory_id}" if e.memory_id else "")
        extra = ""
        if e.action in RETRIEVING:
            c = e.details.get("counts", {})
            extra = f" → {c.get('FULL', 0)}F/{c.get('SUMMARY', 0)}S/{c.get('HEADLINE', 0)}H"
        elif e.action in FLOOR_MOVES:
            extra = f" {e.details.get('from')}→{e.details.get('to')}" + (f" ({e.details['reason']})" if e.details.get("reason") else "")
        elif e.action == "write":
            extra = f" {e.details.get('count', 0)} memories"
        elif e.action in ("resolve", "redetect", "forget", "golden", "tune"):
            extra = " " + summarise(e)
        _say(f"#{e.id:<6} {iso(e.at)}  {_field(e.action):<8} {_field(e.actor):<20} {_field(what)}{_field(extra)}")


@audit.command("replay")
@click.argument("event_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="The event, and per memory the tier recorded and the tier rebuilt.")
@click.option("--text", "as_text", is_flag=True, help="Print the rebuilt answer exactly as the agent read it.")
@pass_session
def audit_replay(session: CliContext, event_id: int, as_json: bool, as_text: bool) -> None:
    """Rebuild a past search on the store as it was just before it, and compare with what it recorded.

    Exits 1 if the answer rebuilt differs from the one the audit log recorded.
    """
    replay = session.open(must_exist=True, read_only=True).replay(event_id)
    e = replay.event
    if as_json:
        _echo_json({
            "event": e.to_dict(), "agrees": replay.agrees, "memories_then": len(replay.landscape.state),
            "recorded": {str(i): t.name for i, t in (replay.recorded or {}).items()},
            "replayed": {str(i): t.name for i, t in replay.replayed.items()},
            "text": replay.result.render() if replay.result is not None else None,
        })
    elif as_text and replay.result is not None:
        _echo_text(replay.result.render())
    else:
        who = e.actor + (f" for {e.agent_id}" if e.agent_id and e.agent_id != e.actor else "")
        _say(f"Search #{e.id} by {_field(who)} at {iso(e.at)}: {_field(repr(e.query or e.action))}; "
             f"the store then held {len(replay.landscape.state):,} memories this agent could see.")
        counts = {t.name: 0 for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE)}
        for tier in replay.replayed.values():
            counts[tier.name] += 1
        _say(f"Rebuilt: {counts['FULL']} full, {counts['SUMMARY']} summaries, {counts['HEADLINE']} headlines.")
        if replay.agrees is None:
            _say("Its audit line predates recorded answers: nothing to compare with.")
        elif replay.agrees:
            _say("The same memories at the same tiers as it recorded.")
        else:
            frame = replay.frame()
            differ = frame[frame.recorded != frame.replayed]
            _say(f"{len(differ):,} memories differ from what it recorded:")
            for row in differ.head(50).to_dict("records"):
                _say(f"  #{row['memory_id']}: recorded {row['recorded'] or 'not returned'}, rebuilt {row['replayed'] or 'not returned'}")
    if replay.agrees is False:
        raise SystemExit(1)


@audit.command("verify")
@click.option("--json", "as_json", is_flag=True)
@pass_session
def audit_verify(session: CliContext, as_json: bool) -> None:
    """Replay the audit log and compare it with the data: counts, floors, profiles, writes.

    Exits 1 and lists each disagreement if the log does not account for the data.
    """
    from lodviz.verify import verify

    report = verify(session.open(must_exist=True, read_only=True))
    if as_json:
        _echo_json(report.to_dict())
    else:
        _say(f"{report.events:,} audit events replayed against {report.memories:,} memories: {report.checks:,} checks, "
             f"{len(report.disagreements)} disagreements" + (f", {report.unverifiable:,} memories imported before writes "
             "recorded their history (not verifiable)" if report.unverifiable else "") + ".")
        for d in report.disagreements[:50]:
            _say(f"  {_field(d)}")
        if len(report.disagreements) > 50:
            _say(f"  ... and {len(report.disagreements) - 50} more")
    if not report.ok:
        raise SystemExit(1)


# -- the owner of a store: serve, demo, and the stdio relay -------------------------------------


def _serve_settings(ctx: click.Context, store: str | None) -> Settings:
    """The group's settings, with a --store given to this command winning."""
    _refuse_password_flag(ctx, store)
    session = ctx.find_object(CliContext)
    settings = session.settings if session is not None else Settings.resolve()
    return Settings(
        store=store or settings.store, model=settings.model, compressor=settings.compressor, home=settings.home, matrix=settings.matrix
    )


def _access_options(func: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(
        [
            click.option("--auth", is_flag=True, envvar="LODVIZ_AUTH", help="Require a token for every request (env LODVIZ_AUTH)."),
            click.option("--read-only", is_flag=True, help="A demo: nothing is written, not even the use a search counts."),
            click.option("--allowed-host", multiple=True, help="With --host other than loopback: a name clients use for this server (repeatable)."),
        ]
    ):
        func = option(func)
    return func


_store_option = click.option("--store", "store", default=None, help="The store file or postgresql:// URL (default: the lodviz group's --store / LODVIZ_STORE).")
_create_option = click.option("--create", is_flag=True, help="Start an empty store if none is at the path (without it, a path with no store is refused).")


def _require_store(store: str, create: bool) -> None:
    """Refuse a store file that is not there unless asked to create it: a mistyped path must not
    become an empty store that an agent then finds nothing in."""
    if create or store == ":memory:" or is_postgres_url(store) or Path(store).exists():
        return
    raise lodviz.StoreError(f"no store at {store}; pass --create to start an empty one there.")


@cli.command("migrate")
@click.argument("source")
@click.argument("target")
def migrate_command(source: str, target: str) -> None:
    """Copy the store SOURCE into a new, empty store TARGET, and check the copy.

    Either may be a DuckDB file or a postgresql:// URL (passwords from
    PGPASSWORD, ~/.pgpass or a service file, never on the command line).
    Every memory, its usage, floors and layout, the profiles, golden queries,
    conflicts and the whole audit log are copied in one transaction; then both
    are compared table by table (rows and a SHA-256 of every row).
    """
    from urllib.parse import urlsplit

    from lodviz.migrate import copy_store

    for location in (source, target):
        if is_postgres_url(location) and urlsplit(location).password:
            raise click.UsageError(
                "a password in a URL argument shows in `ps`; give the URL without it and put the password in "
                "PGPASSWORD, ~/.pgpass or a service file."
            )
    if not is_postgres_url(source) and not Path(source).exists():
        raise lodviz.StoreError(f"no store at {source}.")
    report = copy_store(source, target, echo=lambda line: _say(line, err=True))
    for check in report.tables:
        mark = "same" if check.same else "DIFFERENT"
        _say(f"{check.table:<10} {check.source_rows:>9,} -> {check.target_rows:>9,} rows  sha256 {check.target_sha256[:16]}  {mark}")
    if not report.same:
        raise lodviz.StoreError(f"the copy in {report.target} differs from {report.source} (see the tables above).")
    _say(f"Copied {report.source} to {report.target}: every table has the same rows and checksums.")


@cli.command("serve")
@_store_option
@_create_option
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port (0 picks a free one).")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--idle-timeout", type=float, default=None, help="Stop after this many seconds without a request.")
@_access_options
@click.pass_context
def serve_command(
    ctx: click.Context, store: str | None, create: bool, host: str, port: int, no_open: bool, idle_timeout: float | None,
    auth: bool, read_only: bool, allowed_host: tuple[str, ...],
) -> None:
    """Serve the landscape app and the MCP endpoint (/mcp/) over one store.

    This process owns the store; agents reach it through its MCP endpoint or
    through `lodviz mcp` (stdio), which finds it by the registry file beside
    the store. Without --auth it listens on 127.0.0.1 only and trusts every
    local client as any agent (the page says so); with --auth every request
    needs a token (`lodviz token create`), and agents act as their token's agent.
    """
    _check_whole(port, "--port", 0, MAX_PORT)
    settings = _serve_settings(ctx, store)
    _require_store(settings.store, create)
    serve(
        settings.store, host=host, port=port, open_browser=not no_open, model=settings.model, compressor=settings.compressor,
        matrix=settings.matrix, idle_timeout=idle_timeout, auth=auth, read_only=read_only, allowed_hosts=allowed_host,
        settle_heap=True,
    )
    _end_served_process(ctx)


@cli.command("demo")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="Port (0 picks a free one).")
@click.option("--reset", is_flag=True, help="Start again from a fresh copy of the sample store.")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@click.option("--read-only", is_flag=True, help="Nothing is written, not even the use a search counts (for showing it to a room).")
@click.pass_context
def demo_command(ctx: click.Context, host: str, port: int, reset: bool, no_open: bool, read_only: bool) -> None:
    """Serve a working copy of the bundled sample store (three agents of one company).

    The copy lives in $LODVIZ_HOME (default ~/.local/share/lodviz/), so the
    shipped file never changes; --reset starts again from the original.
    """
    from lodviz.serve import registry
    from lodviz.serve.process import launch_browser

    _check_whole(port, "--port", 0, MAX_PORT)
    settings = _serve_settings(ctx, None)
    target = prepare_demo(reset, settings.home)
    running = registry.live_entry(target)
    if running is not None:
        _say(f"lodviz is already serving {target} at {running.url} (MCP at {running.mcp_url})")
        if not no_open:
            launch_browser(running.url)
        return
    serve(
        target, host=host, port=port, open_browser=not no_open, model=settings.model, compressor=settings.compressor,
        matrix=settings.matrix, read_only=read_only, settle_heap=True,
    )
    _end_served_process(ctx)


@cli.command("mcp")
@_store_option
@_create_option
@click.option("--agent", envvar="LODVIZ_AGENT", help="The agent this client acts for (env LODVIZ_AGENT).")
@click.option("--http", "http", is_flag=True, help="Serve the streamable HTTP transport instead of stdio.")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="With --http: address to listen on.")
@click.option("--port", default=DEFAULT_PORT, show_default=True, type=int, help="With --http: port (0 picks a free one).")
@click.option("--timeout", default=120.0, show_default=True, type=float, help="Seconds to wait for the store's server to come up.")
@click.pass_context
def mcp_command(
    ctx: click.Context, store: str | None, create: bool, agent: str | None, http: bool, host: str, port: int, timeout: float
) -> None:
    """The MCP server for one agent: stdio (default) or streamable HTTP.

    stdio: relays to the server that owns the store (`lodviz serve`), starting
    one in the background if none runs, so that any number of agents and the
    browser share the store. --http: own the store and serve /mcp/ (and the
    landscape at /) like `lodviz serve --no-open`; with --agent, every call
    acts for that agent.
    """
    _check_whole(port, "--port", 0, MAX_PORT)
    settings = _serve_settings(ctx, store)
    _require_store(settings.store, create)
    if http:
        serve(
            settings.store, host=host, port=port, open_browser=False, agent=agent, model=settings.model,
            compressor=settings.compressor, matrix=settings.matrix, settle_heap=True,
        )
        _end_served_process(ctx)
        return
    if not agent:
        raise click.UsageError("give --agent NAME: the agent this MCP client acts for.")
    from lodviz.mcp_server import build_mcp, check_agent
    from lodviz.serve.relay import run_relay

    check_agent(agent)
    if is_postgres_url(settings.store):
        # Any number of processes write a PostgreSQL store: this one serves its agent itself.
        mem = lodviz.open(
            settings.store, model=settings.model, actor=agent, compressor=settings.compressor, lock=threading.RLock(), matrix=settings.matrix
        )
        try:
            build_mcp(mem, agent=agent).run("stdio")
        finally:
            mem.close()
        return
    run_relay(settings.store, agent, model=settings.model, compressor=settings.compressor, timeout=timeout, create=create)


def _end_served_process(ctx: click.Context) -> None:
    """End ``lodviz serve`` now that the store is closed and the registry entry gone.

    Tearing down the interpreter after torch has been loaded takes seconds on
    its own, and a service manager's SIGTERM must end the process promptly
    (within 2 s). Everything that needed cleaning up is, so skip the teardown.
    Only when run as the ``lodviz`` program: never inside a caller's process.
    """
    if ctx.find_root().info_name == "lodviz":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main() -> None:
    cli(prog_name="lodviz")


if __name__ == "__main__":
    main()
