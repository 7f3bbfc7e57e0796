"""The 3D scene: terraces, memories, the terrain surface and the query camera.

``build_figure`` draws a ``View`` from scratch; ``patch_figure`` updates only
what a slider move changes (heights, colours, the terrain, the camera's lines)
so a repaint sends a few arrays, not the scene. Trace order is fixed (see
``TRACE``) so patches can address traces by index.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from dash import Patch
from scipy.ndimage import gaussian_filter

from lodviz import scoring
from lodviz.app.view import TERRACE_HEIGHT, View, query_lines, terrace_height
from lodviz.records import Label
from lodviz.scoring import Tier

TIER_COLOURS = {
    Tier.FULL: "#ffcf5c",
    Tier.SUMMARY: "#3ddc97",
    Tier.HEADLINE: "#4aa3ff",
    Tier.OUT: "#5b6478",
}
QUALITATIVE = ["#ff8c61", "#4aa3ff", "#3ddc97", "#c792ea", "#ffcf5c", "#f06292", "#80cbc4", "#a1887f"]
BACKGROUND = "#0b1020"
GRID = "#1f2a44"
TEXT = "#c9d3e6"

TRACE = {
    "terraces": 0, "faint": 4, "memories": 5, "terrain": 6, "lines": 7, "camera": 8, "conflicts": 9, "recent": 10,
    "returned": 11, "changed": 12, "unbudgeted": 13,
}
#: The quieter mark: where a memory the budget lowered sits without the budget.
UNBUDGETED_OPACITY = 0.3
#: The faint cloud's marker (not a candidate): a two-triangle square, not a triangle-fan circle.
FAINT_SHAPE = "square"
RECENT_COLOUR = "#ffffff"
#: A replayed search's answer: what the agent received then.
RETURNED_COLOUR = "#f472d0"
#: Tier changes against the reference settings: rising (up, in) and falling (down, out).
CHANGE_COLOURS = {"up": "#22e1ff", "in": "#9dff6b", "down": "#ff9f43", "out": "#ff4d6d"}
CHANGE_WORDS = {"up": "up", "down": "down", "in": "in (was out)", "out": "out (was returned)"}
CONFLICT_COLOUR = "#ff5c7a"
COLOR_MODES = ("tier", "agent", "kind", "age")
GRID_CELLS = 56
#: The scene's terrace names and ground axis names, px (presentation mode enlarges them).
TERRACE_LABEL_PX = 13
GROUND_LABEL_PX = 12


def _tier_colorscale() -> list[list[Any]]:
    scale = []
    for tier in Tier:
        lo, hi = tier / 4, (tier + 1) / 4
        scale += [[lo, TIER_COLOURS[tier]], [hi, TIER_COLOURS[tier]]]
    return scale


def _qualitative_scale(n: int) -> list[list[Any]]:
    n = max(n, 1)
    scale = []
    for i in range(n):
        colour = QUALITATIVE[i % len(QUALITATIVE)]
        scale += [[i / n, colour], [(i + 1) / n, colour]]
    return scale


def colours(view: View, mode: str, rows: np.ndarray) -> dict[str, Any]:
    """Marker colour settings for ``rows`` in colour ``mode``; also the legend entries."""
    state = view.land.state
    if mode == "age":
        days = (view.land.now.timestamp() - state.created_at[rows]) / 86_400
        return {
            "color": np.log1p(np.maximum(days, 0)),
            "colorscale": "Plasma",
            "cmin": 0,
            "cmax": float(np.log1p(800)),
            "legend": [("new", "#0d0887"), ("months", "#cc4778"), ("2 years+", "#f0f921")],
        }
    if mode == "agent":
        names = state.agent_names
        codes = state.agent_code[rows]
        palette = [QUALITATIVE[i % len(QUALITATIVE)] for i in range(len(names))]
        legend = list(zip(names, palette))
        scale = _qualitative_scale(len(names))
    elif mode == "kind":
        kinds = sorted(set(state.kind.tolist()))
        index = {k: i for i, k in enumerate(kinds)}
        codes = np.array([index[k] for k in state.kind[rows]], dtype=np.int64)
        palette = [QUALITATIVE[i % len(QUALITATIVE)] for i in range(len(kinds))]
        legend = list(zip(kinds, palette))
        scale = _qualitative_scale(len(kinds))
    else:
        codes = view.tier[rows]
        palette = [TIER_COLOURS[t] for t in Tier]
        legend = [(t.name, TIER_COLOURS[t]) for t in (Tier.FULL, Tier.SUMMARY, Tier.HEADLINE, Tier.OUT)]
        scale = _tier_colorscale()
    return {"color": _coded(codes, palette), "colorscale": scale, "cmin": 0, "cmax": max(len(palette), 1), "legend": legend}


def _coded(codes: np.ndarray, palette: list[str]) -> np.ndarray | str:
    """Each row's colour as its code's place on the stepped scale, or one colour when the rows share one.

    The browser maps an array through the colour scale point by point (about
    7 µs a point: the faint cloud of 14,000 points took 100 ms of every slider
    move), a single colour once. The faint cloud (beyond the k nearest) is OUT
    in the tier colours unless a passage brought one of its memories in.
    """
    if len(codes) and palette and bool((codes == codes[0]).all()):
        return palette[int(codes[0]) % len(palette)]
    return np.asarray(codes, dtype=float) + 0.5


def sizes(view: View, rows: np.ndarray) -> np.ndarray:
    r = view.land.state.retrieval_count[rows]
    return np.clip(4.0 + 1.6 * np.log1p(r), 4.0, 12.0)


def _split(view: View) -> tuple[np.ndarray, np.ndarray]:
    """Drawn rows that a search would consider (bright) and the rest (faint).

    The split depends on the query only, not on the sliders: a slider's patch
    sends heights and colours for the rows each trace already holds.
    """
    candidate = view.land.candidate[view.drawn]
    return view.drawn[~candidate], view.drawn[candidate]


def _bounds(view: View) -> tuple[float, float, float, float]:
    if view.total == 0:
        return -1.0, 1.0, -1.0, 1.0
    pad_x = (np.ptp(view.x) or 1.0) * 0.04
    pad_y = (np.ptp(view.y) or 1.0) * 0.04
    return float(view.x.min() - pad_x), float(view.x.max() + pad_x), float(view.y.min() - pad_y), float(view.y.max() + pad_y)


def terrain(view: View) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The score field: L of every visible memory binned on a grid and smoothed.

    Cells with too little weight nearby are left empty (NaN), so the surface
    covers where memories live, not the whole plane. Heights use the terrace
    mapping of the smoothed score, so the surface rises where points rise.
    """
    x0, x1, y0, y1 = _bounds(view)
    gx = np.linspace(x0, x1, GRID_CELLS)
    gy = np.linspace(y0, y1, GRID_CELLS)
    if view.total == 0:
        empty = np.full((GRID_CELLS, GRID_CELLS), np.nan)
        return gx, gy, empty, empty
    score = view.land.scored.score
    sums, _, _ = np.histogram2d(view.y, view.x, bins=GRID_CELLS, range=[[y0, y1], [x0, x1]], weights=score)
    counts, _, _ = np.histogram2d(view.y, view.x, bins=GRID_CELLS, range=[[y0, y1], [x0, x1]])
    sums = gaussian_filter(sums, 1.6)
    weight = gaussian_filter(counts, 1.6)
    field = np.where(weight > 0.02, sums / np.maximum(weight, 1e-9), np.nan)
    params = view.land.params
    finite = np.nan_to_num(field, nan=0.0)
    tier = scoring.tiers(finite, params)
    height = np.where(np.isnan(field), np.nan, terrace_height(finite, tier, params))
    return gx, gy, height, field


def plotly_text(text: str) -> str:
    """``text`` escaped once for plotly's labels, so it shows exactly as written.

    plotly reads a few tags (``<b>``, ``<br>``, ``<a href>``...) and entities
    in labels and decodes ``&amp;``, ``&lt;``, ``&gt;`` and numeric entities,
    but not ``&quot;``: so only ``&``, ``<`` and ``>`` are escaped. Quotes
    are harmless in a text node and stay as they are.
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def hover_texts(labels: Mapping[int, Label | str], ids: Sequence[int]) -> list[str]:
    """Hover labels: id and headline, then where the memory came from (source, session, tool, file).

    Memory text is escaped so markup in it is shown, never run.
    """
    out = []
    for i in ids:
        label = labels.get(int(i), "")
        headline = label.headline if isinstance(label, Label) else label
        if len(headline) > 140:
            headline = headline[:137] + "…"
        lines = _wrapped(f"#{int(i)} · {headline}", 3)
        if isinstance(label, Label):
            origin = ([f"source: {label.source}"] if label.source else []) + label.details(3)
            lines += _packed(origin, 2)
        out.append("<br>".join(plotly_text(line) for line in lines))
    return out


#: Characters per hover line: a label about 420 px wide fits beside a point on either side of a
#: scene 900 px wide, so Plotly never has to push it past the scene's edge (it was one line of up to 140).
HOVER_LINE = 60


def _wrapped(text: str, max_lines: int) -> list[str]:
    """``text`` in lines of at most HOVER_LINE characters, broken between words; the last cut with "…"."""
    lines = textwrap.wrap(text, HOVER_LINE, break_long_words=True, break_on_hyphens=False)
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: HOVER_LINE - 1].rstrip() + "…"
    return lines


def _packed(parts: Sequence[str], max_lines: int) -> list[str]:
    """``parts`` joined by " · " into lines of at most HOVER_LINE characters, never breaking a part
    ("session: abc123" stays on one line); a part too long for a line is cut with "…"."""
    lines: list[str] = []
    for part in parts:
        part = part if len(part) <= HOVER_LINE else part[: HOVER_LINE - 1] + "…"
        if lines and len(lines[-1]) + 3 + len(part) <= HOVER_LINE:
            lines[-1] += " · " + part
        elif len(lines) < max_lines:
            lines.append(part)
    return lines


def _terrace_planes(view: View) -> list[go.Mesh3d]:
    x0, x1, y0, y1 = _bounds(view)
    planes = []
    for tier in Tier:
        z = tier * TERRACE_HEIGHT
        planes.append(
            go.Mesh3d(
                x=[x0, x1, x1, x0],
                y=[y0, y0, y1, y1],
                z=[z, z, z, z],
                i=[0, 0],
                j=[1, 2],
                k=[2, 3],
                color=TIER_COLOURS[tier],
                opacity=0.07,
                hoverinfo="skip",
                name=f"{tier.name} terrace",
                showscale=False,
            )
        )
    return planes


def _marker(view: View, rows: np.ndarray, mode: str, opacity: float, shape: str) -> dict[str, Any]:
    c = colours(view, mode, rows)
    floored = view.land.state.floor[rows] > 0
    return {
        "size": sizes(view, rows),
        "color": c["color"],
        "colorscale": c["colorscale"],
        "cmin": c["cmin"],
        "cmax": c["cmax"],
        "opacity": opacity,
        "symbol": np.where(floored, "diamond", shape),
        "line": {"width": 0},
    }


def _lines(view: View) -> tuple[list[float | None], list[float | None], list[float | None]]:
    if view.query_xy is None:
        return [], [], []
    qx, qy = view.query_xy
    qz = camera_height()
    rows = query_lines(view)
    z = view.z(rows)
    xs: list[float | None] = []
    ys: list[float | None] = []
    zs: list[float | None] = []
    for row, height in zip(rows, z):
        xs += [qx, float(view.x[row]), None]
        ys += [qy, float(view.y[row]), None]
        zs += [qz, float(height), None]
    return xs, ys, zs


def _conflict_lines(view: View) -> tuple[list[float | None], list[float | None], list[float | None]]:
    """Segments between memories an open conflict links, at their heights in the scene."""
    xs: list[float | None] = []
    ys: list[float | None] = []
    zs: list[float | None] = []
    if not len(view.conflict_pairs):
        return xs, ys, zs
    rows = view.conflict_pairs.ravel()
    heights = view.z(rows).reshape(-1, 2)
    for (a, b), (za, zb) in zip(view.conflict_pairs.tolist(), heights.tolist()):
        xs += [float(view.x[a]), float(view.x[b]), None]
        ys += [float(view.y[a]), float(view.y[b]), None]
        zs += [za, zb, None]
    return xs, ys, zs


def camera_height() -> float:
    return 4 * TERRACE_HEIGHT + 0.9


def build_figure(view: View, headlines: Mapping[int, Label | str], *, color_mode: str = "tier", show_terrain: bool = False) -> go.Figure:
    faint, bright = _split(view)
    state = view.land.state
    fig = go.Figure()
    for plane in _terrace_planes(view):
        fig.add_trace(plane)
    # The faint cloud is most of what is drawn. gl3d draws a "circle" as a fan of
    # triangles and a "square" as two: at its size and opacity the two read alike,
    # and the squares halve the time software GL takes to draw a frame of 15,000
    # points (docs/benchmarks-app.md, sixth pass).
    for rows, opacity, shape, name in ((faint, 0.28, FAINT_SHAPE, "not a candidate"), (bright, 0.92, "circle", "memories")):
        fig.add_trace(
            go.Scatter3d(
                x=view.x[rows],
                y=view.y[rows],
                z=view.z(rows),
                mode="markers",
                marker=_marker(view, rows, color_mode, opacity, shape),
                customdata=state.ids[rows].tolist(),  # a plain list: dcc.Graph looks points up in it by index
                hovertext=hover_texts(headlines, state.ids[rows]),
                hovertemplate="%{hovertext}<extra></extra>",
                name=name,
            )
        )
    gx, gy, height, field = terrain(view) if show_terrain else (None, None, None, None)
    fig.add_trace(
        go.Surface(
            x=gx,
            y=gy,
            z=height,
            surfacecolor=field,
            colorscale=[[0, "#1b2a4a"], [0.5, "#3ddc97"], [1, "#ffcf5c"]],
            cmin=0,
            cmax=1,
            opacity=0.38,
            showscale=False,
            hoverinfo="skip",
            visible=bool(show_terrain),
            name="score terrain",
            contours={"z": {"show": False}},
        )
    )
    xs, ys, zs = _lines(view)
    fig.add_trace(
        go.Scatter3d(x=xs, y=ys, z=zs, mode="lines", line={"color": "rgba(255,255,255,0.35)", "width": 2}, hoverinfo="skip", name="to FULL")
    )
    qx, qy = view.query_xy if view.query_xy else (None, None)
    fig.add_trace(
        go.Scatter3d(
            x=[qx] if qx is not None else [],
            y=[qy] if qy is not None else [],
            z=[camera_height()] if qx is not None else [],
            mode="markers+text",
            marker={"size": 9, "color": "#ffffff", "symbol": "diamond", "line": {"color": "#ffcf5c", "width": 2}},
            text=["query"] if qx is not None else [],
            textposition="top center",
            textfont={"color": "#ffffff", "size": 13},
            hovertext=[f"query: {plotly_text(view.request.query or '')}"] if qx is not None else [],
            hovertemplate="%{hovertext}<extra></extra>",
            name="query camera",
        )
    )
    cx, cy, cz = _conflict_lines(view)
    fig.add_trace(
        go.Scatter3d(
            x=cx, y=cy, z=cz, mode="lines", line={"color": CONFLICT_COLOUR, "width": 4, "dash": "dash"},
            hoverinfo="skip", name="conflicts",
        )
    )
    rx, ry, rz, rids, rtext = _recent(view)
    fig.add_trace(
        go.Scatter3d(
            x=rx, y=ry, z=rz, mode="markers",
            marker={"size": sizes(view, np.asarray(list(view.recent), dtype=np.int64)) + 7, "color": RECENT_COLOUR,
                    "symbol": "circle-open", "opacity": 0.95, "line": {"width": 2, "color": RECENT_COLOUR}},
            customdata=rids, hovertext=rtext, hovertemplate="%{hovertext}<extra></extra>", name="recently used",
        )
    )
    mx, my, mz, mids, mtext = _returned(view)
    fig.add_trace(
        go.Scatter3d(
            x=mx, y=my, z=mz, mode="markers",
            marker={"size": 10, "color": RETURNED_COLOUR, "symbol": "diamond-open", "opacity": 1.0,
                    "line": {"width": 3, "color": RETURNED_COLOUR}},
            customdata=mids, hovertext=mtext, hovertemplate="%{hovertext}<extra></extra>", name="returned then",
        )
    )
    fig.add_trace(go.Scatter3d(**_changed(view), mode="markers", hovertemplate="%{hovertext}<extra></extra>", name="changed tier"))
    fig.add_trace(go.Scatter3d(**_unbudgeted(view), mode="markers", hoverinfo="skip", name="without the budget"))
    x0, x1, y0, y1 = _bounds(view)
    axis = {
        "backgroundcolor": BACKGROUND,
        "gridcolor": GRID,
        "zerolinecolor": GRID,
        "color": TEXT,
        "showspikes": False,
        "title": {"text": ""},
        "showticklabels": False,
    }
    fig.update_layout(
        paper_bgcolor=BACKGROUND,
        plot_bgcolor=BACKGROUND,
        font={"color": TEXT, "family": "Inter, system-ui, sans-serif"},
        margin={"l": 0, "r": 0, "t": 0, "b": 0},
        showlegend=False,
        uirevision="landscape",
        scene={
            "xaxis": {**axis, "range": [x0, x1]},
            "yaxis": {**axis, "range": [y0, y1]},
            "zaxis": {**axis, "range": [0, camera_height() + 0.4]},
            "annotations": scene_labels(x0, x1, y0, y1),
            "aspectmode": "manual",
            "aspectratio": {"x": 1.25, "y": 1.25, "z": 0.8},
            "camera": {"eye": {"x": 1.55, "y": -1.2, "z": 0.75}, "center": {"x": 0.0, "y": 0.02, "z": -0.12}},
        },
        hoverlabel={"bgcolor": "#141c33", "bordercolor": "#3a4a70", "font": {"color": "#ffffff"}},
    )
    return fig


def scene_labels(x0: float, x1: float, y0: float, y1: float) -> list[dict[str, Any]]:
    """The terrace names and the ground's axis names, as labels with a backing.

    They are SVG over the WebGL scene (so they stay legible in front of points
    at any camera angle), anchored on the near-left corner and front edges of
    the default camera, where points are fewest: a point cloud rarely fills the
    corner of its bounding box. Terrace names run inward from the corner, so a
    narrow scene (the panel open) does not cut them off. plotly hides a scene label whose anchor is not
    strictly inside the axis ranges, so anchors sit a hair inside the edges.
    """
    nudge_x, nudge_y = (x1 - x0) * 1e-3, (y1 - y0) * 1e-3
    x0, x1, y0, y1 = x0 + nudge_x, x1 - nudge_x, y0 + nudge_y, y1 - nudge_y
    terraces = [
        {
            "x": x0, "y": y0, "z": t * TERRACE_HEIGHT + 0.45, "text": f"<b>{t.name}</b>", "showarrow": False,
            "xanchor": "left", "xshift": 6, "font": {"color": TIER_COLOURS[t], "size": TERRACE_LABEL_PX},
            "bgcolor": "rgba(11,16,32,0.82)", "bordercolor": TIER_COLOURS[t], "borderwidth": 1, "borderpad": 3,
        }
        for t in Tier
    ]
    ground = {"showarrow": False, "font": {"color": "#9aa6c2", "size": GROUND_LABEL_PX}, "bgcolor": "rgba(11,16,32,0.6)", "borderpad": 2}
    axes = [
        {**ground, "x": (x0 + x1) / 2, "y": y0, "z": 0.01, "text": "semantic map →", "yanchor": "top", "yshift": -6},
        {**ground, "x": x1, "y": (y0 + y1) / 2, "z": 0.01, "text": "semantic map ↗", "yanchor": "top", "yshift": -6},
    ]
    return terraces + axes


def _recent(view: View) -> tuple[list[float], list[float], list[float], list[int], list[str]]:
    """Rings around memories used in the last hour: where, and who used them when."""
    if not view.recent:
        return [], [], [], [], []
    rows = np.asarray(list(view.recent), dtype=np.int64)
    ids = view.land.state.ids[rows]
    texts = []
    for row, memory_id in zip(rows.tolist(), ids.tolist()):
        use = view.recent[row]
        how = f"{use.action} “{plotly_text(use.query)}”" if use.query else use.action
        texts.append(f"#{memory_id} · used by {plotly_text(use.who)} at {use.at:%H:%M:%S} UTC (wall clock) · {how}")
    return view.x[rows].tolist(), view.y[rows].tolist(), np.round(view.z(rows), 4).tolist(), ids.tolist(), texts


def _returned(view: View) -> tuple[list[float], list[float], list[float], list[int], list[str]]:
    """Marks on the memories a replayed search returned, with the tier it returned each at."""
    if not view.marked:
        return [], [], [], [], []
    rows = np.asarray(list(view.marked), dtype=np.int64)
    ids = view.land.state.ids[rows]
    event = view.request.replaying
    texts = [f"#{i} · returned as {view.marked[r].name} by search #{event}" for r, i in zip(rows.tolist(), ids.tolist())]
    return view.x[rows].tolist(), view.y[rows].tolist(), np.round(view.z(rows), 4).tolist(), ids.tolist(), texts


def _changed(view: View) -> dict[str, Any]:
    """The changed-tier trace's data: an open square on each memory that moved, coloured by how (``CHANGE_COLOURS``)."""
    rows = np.asarray(list(view.changed), dtype=np.int64)
    if not len(rows) or view.changes is None:
        return {"x": [], "y": [], "z": [], "customdata": [], "hovertext": [], "marker": {"size": 9, "color": [], "symbol": "square-open"}}
    ids = view.land.state.ids[rows]
    before = dict(zip(view.changes.ids.tolist(), view.changes.before.tolist()))
    after = dict(zip(view.changes.ids.tolist(), view.changes.after.tolist()))
    kinds = [view.changed[r] for r in rows.tolist()]
    texts = [
        f"#{i} · {Tier(before[i]).name} → {Tier(after[i]).name}: {CHANGE_WORDS[k]} against the reference settings"
        for i, k in zip(ids.tolist(), kinds)
    ]
    return {
        "x": view.x[rows].tolist(), "y": view.y[rows].tolist(), "z": np.round(view.z(rows), 4).tolist(),
        "customdata": ids.tolist(), "hovertext": texts,
        # One open square in the change's colour: WebGL draws plotly's other open symbols unevenly.
        "marker": {"size": 9, "color": [CHANGE_COLOURS[k] for k in kinds], "symbol": "square-open",
                   "opacity": 1.0, "line": {"width": 2, "color": [CHANGE_COLOURS[k] for k in kinds]}},
    }


def _unbudgeted(view: View) -> dict[str, Any]:
    """The quieter second mark: each memory the budget lowered, at the tier it has without the budget.

    Not hoverable (the solid point is, and the legend says what a ring is): on
    a wide k these are most candidates, and a slider move resends them, so
    they go as rounded numbers only. The ring is the glyph itself, in its
    tier's colour; an outline (line width above 0) would draw every ring a
    second time, in grey, and cost a fifth of a frame at 100,000 memories.
    """
    rows = view.unbudgeted
    without = view.land.returned_tiers()[rows]
    return {
        "x": np.round(view.x[rows], 4), "y": np.round(view.y[rows], 4), "z": np.round(view.z(rows, without), 4),
        "marker": {"size": 5, "color": without.astype(float) + 0.5, "colorscale": _tier_colorscale(), "cmin": 0, "cmax": 4,
                   "symbol": "circle-open", "opacity": UNBUDGETED_OPACITY, "line": {"width": 0}},
    }


def patch_figure(view: View, *, color_mode: str = "tier", show_terrain: bool = False) -> Patch:
    """What a slider move changes: heights, colours, terrain and the camera's lines.

    Not marker symbols: they show tier floors, which only a write changes, and a
    write redraws the figure. Heights go as 4 decimals (a ten-thousandth of a
    terrace is below a pixel): a patch is JSON lists, and full-precision floats
    were most of its bytes.
    """
    patch = Patch()
    faint, bright = _split(view)
    for index, rows in ((TRACE["faint"], faint), (TRACE["memories"], bright)):
        patch["data"][index]["z"] = np.round(view.z(rows), 4)
        c = colours(view, color_mode, rows)
        patch["data"][index]["marker"]["color"] = c["color"]
        patch["data"][index]["marker"]["colorscale"] = c["colorscale"]
        patch["data"][index]["marker"]["cmin"] = c["cmin"]
        patch["data"][index]["marker"]["cmax"] = c["cmax"]
    patch["data"][TRACE["terrain"]]["visible"] = bool(show_terrain)
    if show_terrain:
        gx, gy, height, field = terrain(view)
        patch["data"][TRACE["terrain"]]["x"] = gx
        patch["data"][TRACE["terrain"]]["y"] = gy
        patch["data"][TRACE["terrain"]]["z"] = height
        patch["data"][TRACE["terrain"]]["surfacecolor"] = field
    xs, ys, zs = _lines(view)
    patch["data"][TRACE["lines"]]["x"] = xs
    patch["data"][TRACE["lines"]]["y"] = ys
    patch["data"][TRACE["lines"]]["z"] = zs
    cx, cy, cz = _conflict_lines(view)
    patch["data"][TRACE["conflicts"]]["x"] = cx
    patch["data"][TRACE["conflicts"]]["y"] = cy
    patch["data"][TRACE["conflicts"]]["z"] = cz
    rx, ry, rz, _, _ = _recent(view)
    patch["data"][TRACE["recent"]]["z"] = rz
    _, _, mz, _, _ = _returned(view)
    patch["data"][TRACE["returned"]]["z"] = mz
    changed = _changed(view)
    for key in ("x", "y", "z", "customdata", "hovertext", "marker"):
        patch["data"][TRACE["changed"]][key] = changed[key]
    ghost = _unbudgeted(view)
    for key in ("x", "y", "z", "marker"):
        patch["data"][TRACE["unbudgeted"]][key] = ghost[key]
    return patch
