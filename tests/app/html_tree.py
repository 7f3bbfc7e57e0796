"""The HTML blocks the app sends (``lodviz/app/html_block.py``) read back as elements, for tests without a browser."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"br", "img", "hr", "input", "meta", "link"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]
    children: list[Element | str] = field(default_factory=list)

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        return " ".join("".join(c if isinstance(c, str) else f" {c.text()} " for c in self.children).split())

    def find(self, cls: str | None = None, tag: str | None = None) -> list[Element]:
        """Every element under this one with that class (or tag), in document order."""
        out = []
        for child in self.children:
            if isinstance(child, Element):
                if (cls is None or cls in child.classes) and (tag is None or child.tag == tag):
                    out.append(child)
                out += child.find(cls, tag)
        return out


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Element("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs))
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag):
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(markup: str) -> Element:
    builder = _Builder()
    builder.feed(markup)
    builder.close()
    return builder.root
