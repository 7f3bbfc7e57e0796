"""The "What changed" lists as one block of HTML: every slider move draws them again.

A move of λ with nothing open can change the tier of thousands of memories,
and the lists name up to ``CHANGE_LIST_LIMIT`` of each kind. Drawn as Dash
components (a row, its button and two spans each) that was about a thousand
components a move, and Dash's renderer walked every one of them on every
update: 450 ms of a 1.2 s move at 100,000 memories. As one ``dcc.Markdown``
holding a single HTML block the browser gets one ``innerHTML`` instead.

Memory text is escaped here, once, for both text and attributes: a headline
is the agent's data and never markup. A click on a row's button is handled in
``assets/lists.js``, which opens the memory by its ``data-memory`` attribute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from dash import dcc

#: The most memories the change list names per kind (the counts cover all).
CHANGE_LIST_LIMIT = 60


def _row(memory_id: int, kind: str, tiers: str, headline: str) -> str:
    return (
        f'<div class="change-item {kind}" id="change-item-{memory_id}">'
        f'<button type="button" class="btn small result-id" data-memory="{memory_id}" title="Open it in the panel and the scene">'
        f"#{memory_id}</button>"
        f'<span class="change-tiers">{escape(tiers)}</span>'
        f'<span class="change-headline">{escape(headline)}</span></div>'
    )


def change_lists_html(
    groups: Sequence[tuple[str, str, str, int, Sequence[tuple[int, str]]]],
    headlines: Mapping[int, str],
) -> str:
    """The lists' HTML: ``groups`` of (kind, title, colour, how many in all, [(memory id, "OLD → NEW")]).

    One line per element and no blank line, so that Markdown reads the whole
    string as a single HTML block and passes it through untouched.
    """
    parts: list[str] = []
    for kind, words, colour, total, rows in groups:
        if not rows:
            continue
        parts.append(
            f'<details open class="change-group {escape(kind)}" id="change-group-{escape(kind)}">'
            f'<summary><i class="swatch" style="background: {escape(colour)}"></i> {escape(words)}: {total:,}</summary>'
        )
        parts += [_row(int(i), escape(kind), tiers, " ".join(str(headlines.get(int(i), "")).split())) for i, tiers in rows]
        if total > len(rows):
            parts.append(f'<div class="hint">and {total - len(rows):,} more</div>')
        parts.append("</details>")
    return "\n".join(parts)


def change_lists(groups: Sequence[tuple[str, str, str, int, Sequence[tuple[int, str]]]], headlines: Mapping[int, str]) -> dcc.Markdown:
    """The lists as one component, whatever their length."""
    return dcc.Markdown(change_lists_html(groups, headlines), dangerously_allow_html=True, className="change-lists", id="change-lists")
