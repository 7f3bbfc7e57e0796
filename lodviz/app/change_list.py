"""The "What changed" lists: the memories whose tier moved against the reference, kind by kind.

A move of λ with nothing open can change the tier of thousands of memories;
the lists name up to ``CHANGE_LIST_LIMIT`` of each kind and count the rest.
They are redrawn on every slider move, so they go to the page as one HTML
block (``html_block``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dash import dcc

from lodviz.app.html_block import block, memory_button, text

#: The most memories the change list names per kind (the counts cover all).
CHANGE_LIST_LIMIT = 60

#: One kind's list: (kind, its title, its colour, how many in all, [(memory id, "OLD → NEW")]).
Group = tuple[str, str, str, int, Sequence[tuple[int, str]]]


def change_lines(groups: Sequence[Group], headlines: Mapping[int, str]) -> list[str]:
    """The lists' HTML, one element per line."""
    lines: list[str] = []
    for kind, words, colour, total, rows in groups:
        if not rows:
            continue
        kind = text(kind)
        lines.append(f'<details open class="change-group {kind}" id="change-group-{kind}">'
                     f'<summary><i class="swatch" style="background: {text(colour)}"></i> {text(words)}: {total:,}</summary>')
        lines += [
            f'<div class="change-item {kind}" id="change-item-{int(i)}">{memory_button(i)}'
            f'<span class="change-tiers">{text(tiers)}</span><span class="change-headline">{text(headlines.get(int(i), ""))}</span></div>'
            for i, tiers in rows
        ]
        if total > len(rows):
            lines.append(f'<div class="hint">and {total - len(rows):,} more</div>')
        lines.append("</details>")
    return lines


def change_lists(groups: Sequence[Group], headlines: Mapping[int, str]) -> dcc.Markdown:
    """The lists as one component, whatever their length."""
    return block(change_lines(groups, headlines), "change-lists", "change-lists")
