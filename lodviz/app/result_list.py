"""The result list: what the agent receives for the current query, line by line, as it reads it.

It is drawn from the very ``Result`` the scene and the header show (one
search, ``view.agent_result``, sent with the scene in one response), so its
tokens, tiers and lines are theirs. The lines are exactly those of
``Result.render()`` (what the MCP tool and ``search --text`` return); the first
``RESULT_LIST_LIMIT`` are listed with their ids, and the whole text, in the
agent's order, is below. Memory text goes into plain text nodes, never HTML.
"""

from __future__ import annotations

from typing import Any

from dash import html

from lodviz.app import ids
from lodviz.app.page import tier_badge
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


def item(hit: Any) -> html.Div:
    """One line of the result, its id a button that opens the memory; a long memory's excerpt said so."""
    rendered = line(hit.id, hit.content, hit.whole, hit.conflicts, hit.superseded_by, bool(hit.excerpt))
    rendered = rendered.removeprefix(f"#{hit.id} ")  # the id is the button before it
    # A long memory's passages nearest the query, as the agent reads them: said so, or they pass for a summary.
    marked = [html.Span("excerpt", className="excerpt-tag",
                        title=f"{len(hit.excerpt)} of its passages, verbatim; … where text was left out")] if hit.excerpt else []
    return html.Div(
        [
            html.Button(f"#{hit.id}", id={"type": ids.RESULT_PICK, "id": int(hit.id)}, className="btn small result-id", n_clicks=0,
                        title="Open it in the panel and the scene"),
            *marked,
            html.Span(rendered, className="result-line"),
        ],
        className="result-item excerpt" if hit.excerpt else "result-item",
    )


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
    for tier in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE):
        hits = result.by_tier(tier)
        if not hits:
            continue
        out.append(html.Div([tier_badge(tier), html.Span(f" {len(hits)}", className="hint")], className="result-tier"))
        listed = hits[:room]
        room -= len(listed)
        out.extend(item(hit) for hit in listed)
        if len(listed) < len(hits):
            # A whole landscape is a thousand lines: the page lists what a person reads, the exact text holds them all.
            out.append(html.Div(f"and {len(hits) - len(listed):,} more {tier.name.lower()} lines, in the exact text below",
                                className="hint result-more"))
    out.append(html.Details([html.Summary("The exact text, in the agent's order"),
                             html.Pre(result.render(), className="full-text", id=ids.RESULT_TEXT)], className="result-exact"))
    return html.Div(out, className="result-view")
