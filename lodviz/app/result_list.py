"""The result list: what the agent receives for the current query, line by line, as it reads it.

It is drawn from the very ``Result`` the scene and the header show (one
search, ``view.agent_result``, sent with the scene in one response), so its
tokens, tiers and lines are theirs. The lines are exactly those of
``Result.render()`` (what the MCP tool and ``search --text`` return); the first
``RESULT_LIST_LIMIT`` are listed with their ids, and the whole text, in the
agent's order, is below. The lines are redrawn on every slider move, so they
go to the page as one HTML block (``html_block``), memory text escaped in it;
the exact text is a plain text node.
"""

from __future__ import annotations

from typing import Any

from dash import html

from lodviz.app import ids
from lodviz.app.figure import TIER_COLOURS
from lodviz.app.html_block import block, memory_button, text
from lodviz.app.view import ViewRequest
from lodviz.result import Result, line
from lodviz.scoring import Tier

#: Result lines listed with their ids; past it, the exact text below the list holds the rest.
RESULT_LIST_LIMIT = 100


def title(request: ViewRequest) -> str:
    who = request.agent_id or "an agent with every memory (auditor view)"
    if request.replaying is not None:
        said = f"What {who} received (search #{request.replaying}, rebuilt)"
    elif request.moment is not None and request.moment.at is not None:
        said = f"What {who} would have received on {request.moment.at:%Y-%m-%d}"
    else:
        said = f"What {who} receives"
    return said + (f", within {request.budget_tokens:,} tokens" if request.budget_tokens else "")


def item(hit: Any) -> str:
    """One line of the result as HTML, its id a button that opens the memory; a long memory's excerpt said so."""
    rendered = line(hit.id, hit.content, hit.whole, hit.conflicts, hit.superseded_by, bool(hit.excerpt))
    rendered = rendered.removeprefix(f"#{hit.id} ")  # the id is the button before it
    # A long memory's passages nearest the query, as the agent reads them: said so, or they pass for a summary.
    marked = (f'<span class="excerpt-tag" title="{len(hit.excerpt)} of its passages, verbatim; … where text was left out">excerpt</span>'
              if hit.excerpt else "")
    return (f'<div class="{"result-item excerpt" if hit.excerpt else "result-item"}">{memory_button(hit.id)}{marked}'
            f'<span class="result-line">{text(rendered)}</span></div>')


def tier_heading(tier: Tier, n: int) -> str:
    return (f'<div class="result-tier"><span class="badge" style="background: {TIER_COLOURS[tier]}; color: #0b1020">{tier.name}</span>'
            f'<span class="hint"> {n}</span></div>')


def result_list(request: ViewRequest, result: Result, tokens: int, tokenizer: str) -> html.Div:
    """The list for ``result`` (the view's), with its real token count in ``tokenizer``."""
    out: list[Any] = [
        html.Div(title(request), className="section-title result-title"),
        html.Div(
            [html.B(f"{tokens:,}", id=ids.RESULT_TOKENS), f" tokens ({tokenizer}) · ",
             f"{len(result.items):,} memories: " + ", ".join(f"{n} {t.lower()}" for t, n in result.counts.items())],
            className="hint result-counts",
        ),
    ]
    room = RESULT_LIST_LIMIT
    lines: list[str] = []
    for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE):
        hits = result.by_tier(tier)
        if not hits:
            continue
        lines.append(tier_heading(tier, len(hits)))
        listed = hits[:room]
        room -= len(listed)
        lines.extend(item(hit) for hit in listed)
        if len(listed) < len(hits):
            # A whole landscape is a thousand lines: the page lists what a person reads, the exact text holds them all.
            lines.append(f'<div class="hint result-more">and {len(hits) - len(listed):,} more {tier.name.lower()} lines, in the exact text below</div>')
    out.append(block(lines, "result-lines", ids.RESULT_LINES))
    out.append(html.Details([html.Summary("The exact text, in the agent's order"),
                             html.Pre(result.render(), className="full-text", id=ids.RESULT_TEXT)], className="result-exact"))
    return html.Div(out, className="result-view")
