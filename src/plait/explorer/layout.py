"""The graph drawn as SVG: each kernel (or host step) a cluster outlined and labelled,
its equations in rows by their depth inside the cluster, clusters flowing left to right
in bands; nodes coloured by primitive, edges for every value an equation reads.

The layout is written here (no external library): ``layout(nodes, steps)`` places the
boxes, ``svg(...)`` renders them.
"""
from __future__ import annotations

import colorsys
import hashlib
import html

NODE_W, NODE_H = 112, 24
GAP_X, GAP_Y = 10, 18
PAD, TITLE = 10, 20
BAND_W = 1320


def color(prim: str) -> str:
    """A stable colour per primitive name."""
    h = int(hashlib.md5(prim.encode()).hexdigest()[:6], 16) / 0xFFFFFF
    r, g, b = colorsys.hls_to_rgb(h, 0.78, 0.65)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def layout(nodes: list[dict], clusters: list[dict]) -> tuple[dict, dict, int, int]:
    """Positions: ``({node id: (x, y)}, {cluster id: (x, y, w, h)}, width, height)``.

    ``nodes``: ``{"id", "cluster", "inputs": [node ids]}``; ``clusters``: ``{"id"}`` in
    program order."""
    by_cluster: dict = {c["id"]: [] for c in clusters}
    for n in nodes:
        by_cluster[n["cluster"]].append(n)
    pos, boxes = {}, {}
    x = y = band_h = 0
    width = 0
    for c in clusters:
        members = by_cluster[c["id"]]
        inside = {n["id"] for n in members}
        depth: dict = {}
        for n in members:                       # members are in program order
            depth[n["id"]] = 1 + max([depth[i] for i in n["inputs"] if i in inside],
                                     default=-1)
        rows: dict = {}
        for n in members:
            rows.setdefault(depth[n["id"]], []).append(n["id"])
        per_row = max((len(r) for r in rows.values()), default=1)
        w = 2 * PAD + per_row * NODE_W + (per_row - 1) * GAP_X
        w = max(w, 2 * PAD + NODE_W)
        h = TITLE + 2 * PAD + len(rows) * NODE_H + max(len(rows) - 1, 0) * GAP_Y
        if x > 0 and x + w > BAND_W:             # next band
            x, y, band_h = 0, y + band_h + 40, 0
        boxes[c["id"]] = (x, y, w, h)
        for d, ids in rows.items():
            row_w = len(ids) * NODE_W + (len(ids) - 1) * GAP_X
            x0 = x + (w - row_w) / 2
            for k, i in enumerate(ids):
                pos[i] = (x0 + k * (NODE_W + GAP_X), y + TITLE + PAD + d * (NODE_H + GAP_Y))
        x += w + 36
        band_h = max(band_h, h)
        width = max(width, x)
    return pos, boxes, int(width) + 20, int(y + band_h) + 20


def svg(nodes: list[dict], clusters: list[dict]) -> str:
    """The SVG element of the graph (ids ``node-N`` and ``cluster-NAME`` for the page's
    script; nodes carry ``data-node`` and ``data-step``)."""
    pos, boxes, width, height = layout(nodes, clusters)
    out = [f'<svg id="graph" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}">',
           '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="6" '
           'markerHeight="6" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#888"/>'
           '</marker></defs>']
    for c in clusters:
        x, y, w, h = boxes[c["id"]]
        kind = c.get("kind", "kernel")
        out.append(f'<g class="cluster {kind}" id="cluster-{html.escape(c["id"])}" '
                   f'data-step="{html.escape(c["id"])}">'
                   f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6"/>'
                   f'<text x="{x + 8}" y="{y + 15}" class="ctitle">'
                   f'{html.escape(c["label"])}</text></g>')
    for n in nodes:                               # edges under the nodes
        x1, y1 = pos[n["id"]]
        for i in n["inputs"]:
            if i not in pos:
                continue
            x0, y0 = pos[i]
            ax, ay = x0 + NODE_W / 2, y0 + NODE_H
            bx, by = x1 + NODE_W / 2, y1
            if by <= ay:                          # a later cluster of the same band:
                sx, sy = x0 + NODE_W, y0 + NODE_H / 2          # from side to side
                tx, ty = x1, y1 + NODE_H / 2
                bend = max(abs(tx - sx) / 2, 30)
                out.append(f'<path class="edge" d="M{sx},{sy} C{sx + bend},{sy} {tx - bend},{ty} '
                           f'{tx},{ty}" marker-end="url(#arrow)"/>')
            else:
                my = (ay + by) / 2
                out.append(f'<path class="edge" d="M{ax},{ay} C{ax},{my} {bx},{my} {bx},{by}" '
                           f'marker-end="url(#arrow)"/>')
    for n in nodes:
        x, y = pos[n["id"]]
        label = n["label"] if len(n["label"]) <= 16 else n["label"][:15] + "…"
        out.append(f'<g class="node" id="node-{n["id"]}" data-node="{n["id"]}" '
                   f'data-step="{html.escape(n["cluster"])}"><title>{html.escape(n["text"])}'
                   f'</title><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="4" '
                   f'fill="{color(n["prim"])}"/><text x="{x + NODE_W / 2}" y="{y + 16}" '
                   f'text-anchor="middle">{html.escape(label)}</text></g>')
    out.append("</svg>")
    return "\n".join(out)
