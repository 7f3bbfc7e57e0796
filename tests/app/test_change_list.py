"""The "What changed" lists: one HTML block whatever their length, memory text escaped in it."""

from __future__ import annotations

from html.parser import HTMLParser

from dash.development.base_component import Component

from lodviz.app import create_app
from lodviz.app.callbacks import scoring
from lodviz.app.change_list import change_lists_html
from lodviz.app.view import ViewRequest, compute_view
from lodviz.params import Params

from .conftest import XSS

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
    markup = change_lists_html([("up", "Up a tier", "#22e1ff", 1, [(7, "SUMMARY → FULL")])], {7: XSS})
    got = parsed(markup)
    assert "img" not in [tag for tag, _ in got.tags]
    assert not any(name.startswith("on") for _, attrs in got.tags for name in attrs)
    assert XSS in "".join(got.text)


def test_each_row_opens_its_memory_by_id():
    markup = change_lists_html([("down", "Down a tier", "#ff9f43", 3, [(5, "FULL → OUT"), (9, "SUMMARY → HEADLINE")])], {5: "a", 9: "b"})
    buttons = [attrs for tag, attrs in parsed(markup).tags if tag == "button"]
    assert [b["data-memory"] for b in buttons] == ["5", "9"]
    assert "and 1 more" in markup


def test_a_markdown_line_break_in_a_headline_does_not_end_the_block():
    # Markdown ends an HTML block at a blank line; a headline's own blank line must not cut the lists short.
    markup = change_lists_html([("in", "In", "#9dff6b", 2, [(1, "OUT → FULL"), (2, "OUT → FULL")])], {1: "first\n\nsecond", 2: "x"})
    assert "\n\n" not in markup


def test_a_long_change_list_is_one_component(app_mem):
    ctx = create_app(app_mem, place_on_start=False, warm_model=False).lodviz
    reference = Params(alpha=1.0, lam=0.001)
    view = compute_view(app_mem, ViewRequest(params=Params(alpha=0.05, lam=0.3), query=QUERY, reference=reference))
    assert len(view.changes) > 50  # long enough that rows as components would be hundreds of them
    _, lists = scoring.changes_children(ctx, view, {"label": "x", "params": reference.to_dict()})
    assert components(lists) == 2  # "against ..." and the lists' one Markdown
    listed = [int(attrs["data-memory"]) for tag, attrs in parsed(lists[-1].children).tags if tag == "button"]
    assert listed == [i for kind in ("up", "down", "in", "out") for i in view.changes.of(kind)[:60].tolist()]

