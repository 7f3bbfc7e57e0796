"""A long memory's passages in the panel: a strip of heat along its text, and the text passage by passage.

The strip has one segment per passage, as wide as its share of the text,
coloured by its S for the current query (from the memory's least to its most
relevant passage; no query: all neutral). The passages the agent received in
its latest use of the memory (``Memory.passages``, read from the audit log)
are outlined and marked ▼, with a legend; hovering a segment says why (its S
and rank now, and in the search that delivered it), and a line below the strip
names that search. Below, the text passage by passage, the received ones
highlighted and each labelled with its number, S and rank; a click on a
segment shows its passage there (``assets/strip.js``).

Everything comes from ``Memory.passages`` (a DataFrame); memory text goes into
plain text nodes, never HTML.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from dash import html
from plotly.colors import sample_colorscale

from lodviz.app import ids
from lodviz.drilling import ordinal

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: Cold to hot, readable on the panel's dark background at both ends.
HEAT = [[0.0, "#26305a"], [0.35, "#6a3d9a"], [0.7, "#e0567a"], [1.0, "#ffcf5c"]]
#: A passage's colour without a query: nothing is near or far.
NEUTRAL = "#3a4560"
#: Below this spread of S the passages are all as near: shown as the middle of the scale, not stretched to its ends.
FLAT = 1e-6


def heat(t: float) -> str:
    """The strip's colour at ``t`` in [0, 1]."""
    return str(sample_colorscale(HEAT, [min(max(t, 0.0), 1.0)])[0])


def colours(frame: pd.DataFrame) -> list[str]:
    """Each passage's colour: its S between the memory's least and most relevant passage (neutral without a query)."""
    s = frame["S"].astype(float)
    if s.isna().all():
        return [NEUTRAL] * len(frame)
    lo, hi = float(s.min()), float(s.max())
    if hi - lo < FLAT:
        return [heat(0.5)] * len(frame)
    return [heat((float(v) - lo) / (hi - lo)) for v in s]


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def data(name: str, value: object) -> dict[str, Any]:
    """A ``data-*`` attribute for a Dash component (what ``assets/strip.js`` reads)."""
    return {f"data-{name}": str(value)}


def rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in record.items()} for record in frame.to_dict("records")]


def hover(row: dict[str, Any], count: int) -> str:
    """What a segment says when pointed at: the passage, its S and rank now, and why it was or was not received."""
    parts = [f"Passage {int(row['position']) + 1} of {count}"]
    s = _number(row['S'])
    if s is not None:
        parts.append(f"S {s:.3f}, {ordinal(int(row['rank']))} nearest of {count} to the query")
    parts.append(str(row['why']))
    return " · ".join(parts)


def delivered_line(frame: pd.DataFrame) -> str:
    """One line naming the use that delivered the memory and the passages it carried, by number, with their S then."""
    delivered = frame.attrs.get("delivered_by")
    if not delivered:
        return "No search or expand on record delivered this memory's text to this agent: no passage was received."
    received = frame[frame["received"]]
    label = str(delivered.get("label", ""))
    if delivered.get("whole"):
        return f"Received whole in {label}."
    if received.empty:
        tier = delivered.get("tier")
        said = "its summary" if tier == "SUMMARY" else "no text of it"
        return f"{label[:1].upper()}{label[1:]} gave {said}: no passage was received."
    picked = []
    for row in rows(received):
        then = _number(row['search_S'])
        picked.append(f"{int(row['position']) + 1}" + (f" (S {then:.2f}, {ordinal(int(row['search_rank']))})" if then is not None else ""))
    noun = "passage" if len(picked) == 1 else "passages"
    return f"Received in {label}: {noun} {', '.join(picked)} of {len(frame)}."


def passage_block(frame: pd.DataFrame, text_length: int, query: str | None) -> tuple[list[Any], list[Any]]:
    """The panel's parts for a long memory's passages: (the strip with its legend and why, the text passage by passage).

    The strip goes beside the tier's why, near the top; the text where the full text would be.
    """
    count = len(frame)
    shades = colours(frame)
    segments: list[Any] = []
    for row, colour in zip(rows(frame), shades, strict=True):
        left = 100.0 * int(row['start']) / max(text_length, 1)
        width = max(100.0 * (int(row['stop']) - int(row['start'])) / max(text_length, 1), 0.6)
        children = [html.Span("▼", className="strip-mark")] if row['received'] else []
        segments.append(
            html.Div(
                children,
                className="strip-segment received" if row['received'] else "strip-segment",
                style={"left": f"{left:.3f}%", "width": f"{width:.3f}%", "background": colour},
                title=hover(row, count),
                **data("position", row['position']),  # assets/strip.js: a click shows this passage in the list
            )
        )
    s = frame["S"].astype(float)
    if query and not s.isna().all():
        scale = html.Span(
            [html.Span(f"S {s.min():.2f}", className="hint"),
             html.I(className="strip-scale", style={"background": f"linear-gradient(90deg, {heat(0)}, {heat(0.35)}, {heat(0.7)}, {heat(1)})"}),
             html.Span(f"{s.max():.2f} to the query", className="hint")],
            className="strip-legend-entry",
            title=f"Each passage's S for “{query}”, from this memory's least to its most relevant passage",
        )
    else:
        scale = html.Span([html.I(className="strip-swatch", style={"background": NEUTRAL}),
                           html.Span("no query: every passage neutral", className="hint")], className="strip-legend-entry")
    received = html.Span([html.I(className="strip-swatch received"), html.Span("▼ outlined: received by the agent", className="hint")],
                         className="strip-legend-entry")
    texts = []
    for row, colour in zip(rows(frame), shades, strict=True):
        s_now = _number(row['S'])
        label = f"¶{int(row['position']) + 1}" + (f" · S {s_now:.2f} · {ordinal(int(row['rank']))}" if s_now is not None else "")
        texts.append(
            html.Div(
                [html.Div([html.Span(label), html.Span("received", className="passage-received")] if row['received'] else label,
                          className="passage-label"),
                 html.Div(str(row['text']), className="passage-text")],
                className="passage received" if row['received'] else "passage",
                style={"borderLeftColor": colour},
                title=str(row['why']),
                **data("position", row['position']),
            )
        )
    strip = [
        html.Div(f"Its {count} passages", className="section-title"),
        html.Div(segments, className="strip", id=ids.PANEL_STRIP),
        html.Div([scale, received], className="strip-legend"),
        html.Div(delivered_line(frame), className="strip-why", id=ids.PANEL_STRIP_WHY),
    ]
    return strip, [
        html.Div("Full text, passage by passage", className="section-title"),
        # assets/strip.js opens a newly shown list (a memory, a query, a delivery) at its first received passage.
        html.Div(texts, className="passages", id=ids.PANEL_PASSAGES,
                 **data("view", f"{frame.attrs.get('memory_id')}|{query or ''}|{(frame.attrs.get('delivered_by') or {}).get('event_id')}")),
    ]


__all__ = ["HEAT", "NEUTRAL", "colours", "delivered_line", "heat", "hover", "passage_block"]
