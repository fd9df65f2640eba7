"""Small stdlib HTML inspection helpers for the web tests."""

from __future__ import annotations

from html.parser import HTMLParser


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))


def elements(html: str) -> list[tuple[str, dict[str, str]]]:
    """Every start tag with its attributes, in document order."""
    parser = _Collector()
    parser.feed(html)
    parser.close()
    return parser.elements


def with_attr(html: str, attr: str, tag: str | None = None) -> list[dict[str, str]]:
    """Attributes of the elements that carry ``attr`` (optionally only ``tag`` elements)."""
    return [a for t, a in elements(html) if attr in a and (tag is None or t == tag)]


def hrefs(html: str) -> list[str]:
    return [a["href"] for t, a in elements(html) if t == "a" and "href" in a]


def cpu_cells(html: str) -> list[dict[str, str]]:
    return [a for t, a in elements(html) if t == "li" and "data-cpu" in a]
