"""Long lists drawn as one block of HTML, because Dash's renderer walks every component on every update.

A list redrawn on each slider move (what changed tier, what the agent
receives) was hundreds of Dash components: a row, its button and a few spans
each. Dash's renderer visits every component of the page on every store
update, so those rows cost more than the scene's redraw: 450 ms of a 1.2 s
move at 100,000 memories for the change list, 100 ms a move on the sample
store for the result list. As one ``dcc.Markdown`` holding a single HTML
block, the browser gets one ``innerHTML`` instead.

Every text that goes in is escaped here, for text and attributes alike,
braces included (the Markdown component parses raw HTML as JSX): memory text
is the agent's data and never markup. The rows' buttons carry the
memory's id in ``data-memory``; ``assets/lists.js`` opens the memory on a click,
as a click on it in the scene does.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from dash import dcc

#: The class every block has: ``assets/lists.js`` listens for clicks inside it.
BLOCK_CLASS = "html-block"


#: dcc.Markdown hands raw HTML to a JSX parser, which reads braces as expressions (a line holding a JSON
#: object made the whole block vanish); as character references they are text.
_BRACES = str.maketrans({"{": "&#123;", "}": "&#125;"})


def text(value: object) -> str:
    """``value`` as escaped text on one line (Markdown ends an HTML block at a blank line)."""
    return escape(" ".join(str(value).split())).translate(_BRACES)


def memory_button(memory_id: int) -> str:
    """A memory's id as a button that opens it."""
    return (f'<button type="button" class="btn small result-id" data-memory="{int(memory_id)}" '
            f'title="Open it in the panel and the scene">#{int(memory_id)}</button>')


def block(lines: Iterable[str], class_name: str, block_id: str) -> dcc.Markdown:
    """One component for any number of ``lines`` of HTML made with ``text`` and ``memory_button``."""
    return dcc.Markdown("\n".join(lines), dangerously_allow_html=True, className=f"{BLOCK_CLASS} {class_name}", id=block_id)
