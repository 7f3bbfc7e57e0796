"""The lists redrawn on every slider move (what changed tier, what the agent receives): one HTML block whatever
their length, memory text escaped in it."""

from __future__ import annotations

from html.parser import HTMLParser

from dash.development.base_component import Component

from lodviz.app import create_app
from lodviz.app.callbacks import scoring
from lodviz.app.change_list import change_lines
from lodviz.app.html_block import text
from lodviz.app.view import ViewRequest, compute_view
from lodviz.params import Params

from .conftest import XSS
from .html_tree import parse

QUERY = "limitation of liability cap in CRO agreements"


class Elements(HTMLParser):
    """The elements and attributes an HTML string makes, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parsed(markup: str) -> Elements:
    out = Elements()
    out.feed(markup)
    return out


def components(node) -> int:
    if isinstance(node, (list, tuple)):
        return sum(components(c) for c in node)
    if isinstance(node, Component):
        return 1 + components(getattr(node, "children", None))
    return 0


def test_a_headline_with_markup_is_text_in_the_list():
    markup = "\n".join(change_lines([("up", "Up a tier", "#22e1ff", 1, [(7, "SUMMARY → FULL")])], {7: XSS}))
    got = parsed(markup)
    assert "img" not in [tag for tag, _ in got.tags]
    assert not any(name.startswith("on") for _, attrs in got.tags for name in attrs)
    assert XSS in "".join(got.text)


def test_each_row_opens_its_memory_by_id():
    markup = "\n".join(change_lines([("down", "Down a tier", "#ff9f43", 3, [(5, "FULL → OUT"), (9, "SUMMARY → HEADLINE")])], {5: "a", 9: "b"}))
    buttons = [attrs for tag, attrs in parsed(markup).tags if tag == "button"]
    assert [b["data-memory"] for b in buttons] == ["5", "9"]
    assert "and 1 more" in markup


def test_a_markdown_line_break_in_a_headline_does_not_end_the_block():
    # Markdown ends an HTML block at a blank line; a headline's own blank line must not cut the lists short.
    markup = "\n".join(change_lines([("in", "In", "#9dff6b", 2, [(1, "OUT → FULL"), (2, "OUT → FULL")])], {1: "first\n\nsecond", 2: "x"}))
    assert "\n\n" not in markup


def test_a_long_change_list_is_one_component(app_mem):
    ctx = create_app(app_mem, place_on_start=False, warm_model=False).lodviz
    reference = Params(alpha=1.0, lam=0.001)
    view = compute_view(app_mem, ViewRequest(params=Params(alpha=0.05, lam=0.3), query=QUERY, reference=reference))
    assert len(view.changes) > 50  # long enough that rows as components would be hundreds of them
    _, lists = scoring.changes_children(ctx, view, {"label": "x", "params": reference.to_dict()})
    assert components(lists) == 2  # "against ..." and the lists' one Markdown
    listed = [int(button.attrs["data-memory"]) for button in parse(lists[-1].children).find(tag="button")]
    assert listed == [i for kind in ("up", "down", "in", "out") for i in view.changes.of(kind)[:60].tolist()]



def test_a_result_line_with_markup_is_text():
    from datetime import UTC, datetime

    from lodviz.app.result_list import item
    from lodviz.result import Hit
    from lodviz.scoring import Tier

    hit = Hit(7, Tier.FULL, XSS, 0.9, 1.0, 0.9, 0.0, 0, None, datetime(2026, 1, 1, tzinfo=UTC), "a", "shared", "note", None, Tier.OUT, 20)
    got = parse(item(hit))
    assert not got.find(tag="img") and XSS in got.text()
    assert [b.attrs["data-memory"] for b in got.find(tag="button")] == ["7"]


def test_braces_in_memory_text_go_as_character_references():
    # dcc.Markdown parses raw HTML as JSX, where a brace opens an expression: a JSON line made the whole list vanish.
    markup = text('the config: {"cap": "2x fees"}')
    assert "{" not in markup and "}" not in markup
    assert parse(markup).text() == 'the config: {"cap": "2x fees"}'
