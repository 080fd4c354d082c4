"""The explorer's HTML: one self-contained file (inline CSS, SVG and script; nothing
fetched), from the data :mod:`plait.explorer.collect` gathers."""
from __future__ import annotations

import html
import json

from plait.explorer.layout import color, svg

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#263238;color:#fff;padding:10px 18px}
header h1{font-size:18px;margin:0}
nav a{color:#b2dfdb;margin-right:14px}
section{padding:8px 18px;border-bottom:1px solid #ddd}
h2{font-size:16px;margin:10px 0 6px}
pre{background:#fff;border:1px solid #ddd;padding:6px;overflow:auto;max-height:480px;
    font:12px/1.35 ui-monospace,monospace;margin:4px 0}
#graphwrap{display:flex;gap:12px;align-items:flex-start}
#graphbox{overflow:auto;max-height:640px;border:1px solid #ddd;background:#fff;flex:1}
#panel{width:340px;min-height:120px;background:#fff;border:1px solid #ddd;padding:8px;
       font-size:13px;position:sticky;top:4px}
#panel code{white-space:pre-wrap;word-break:break-all;font-size:12px}
.cluster rect{fill:#f5f7fa;stroke:#5c6bc0;stroke-width:1.6}
.cluster.host rect{fill:#fff8e1;stroke:#ff8f00;stroke-dasharray:5 3}
.cluster.call rect{fill:#f1f8e9;stroke:#7cb342}
.cluster.inputs rect{fill:#eceff1;stroke:#90a4ae}
.ctitle{font:bold 12px sans-serif;fill:#37474f}
.node{cursor:pointer}.node rect{stroke:#455a64;stroke-width:.8}
.node text{font:11px sans-serif;fill:#212121;pointer-events:none}
.node.sel rect{stroke:#d50000;stroke-width:2.5}
.cluster.sel rect{stroke:#d50000;stroke-width:2.5}
.edge{fill:none;stroke:#9e9e9e;stroke-width:1}
.legend span{display:inline-block;padding:1px 6px;margin:2px;border:1px solid #999;
             border-radius:3px;font-size:12px}
table{border-collapse:collapse;font-size:13px}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:left;vertical-align:top}
.bar{background:#5c6bc0;height:10px}
.ln{display:block}.ln.hl{background:#fff59d}
.ln::before{content:attr(data-n);display:inline-block;width:4.5em;color:#999;
            text-align:right;margin-right:1em}
details{margin:2px 0}.same{color:#888}.unchanged{color:#888}
.diff .add{color:#1b5e20;background:#e8f5e9}.diff .del{color:#b71c1c;background:#ffebee}
"""

_JS = r"""
(function(){
  var D = JSON.parse(document.getElementById('data').textContent);
  var byNode = {};
  D.nodes.forEach(function(n){ byNode[n.id] = n; });
  var panel = document.getElementById('panel');
  function esc(s){ return String(s).replace(/[&<>"]/g, function(c){
    return {'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]; }); }
  function highlightC(step){
    document.querySelectorAll('.ln.hl').forEach(function(e){ e.classList.remove('hl'); });
    if (step === null) return null;
    var r = D.c_ranges[step]; if (!r) return null;
    for (var i = r[0]; i <= r[1]; i++) {
      var e = document.getElementById('c-L' + i); if (e) e.classList.add('hl');
    }
    return r;
  }
  function select(nodeId, stepId){
    document.querySelectorAll('.sel').forEach(function(e){ e.classList.remove('sel'); });
    var n = nodeId ? byNode[nodeId] : null;
    var step = n ? n.cluster : stepId;
    if (n) document.getElementById('node-' + n.id).classList.add('sel');
    var cl = document.getElementById('cluster-' + step); if (cl) cl.classList.add('sel');
    var h = '';
    if (n) h += '<b>' + esc(n.prim) + '</b><br><code>' + esc(n.text) + '</code><br>';
    var info = D.steps[step];
    if (info) {
      h += 'runs in <b>' + esc(step) + '</b> (' + esc(info.kind) + ')<br>';
      if (info.kind === 'kernel') {
        h += '<a href="#kernel-' + step + '">kernel ' + esc(step) + ': Tile</a><br>';
        h += '<a href="#stripe-' + step + '">Stripe passes of ' + esc(step) + '</a><br>';
      }
      var r = highlightC(n && n.stripe_kernel ? n.stripe_kernel : step);
      if (n && n.block && n.stripe_line) {
        var s = document.getElementById('s-' + n.stripe_kernel + '-L' + n.stripe_line);
        if (s) s.classList.add('hl');
        h += 'Stripe block <a class="block-link" href="#s-' + n.stripe_kernel + '-L' +
             n.stripe_line + '">' + esc(n.block) + '</a><br>';
      }
      if (r) h += '<a href="#c-L' + r[0] + '">C lines ' + r[0] + '-' + r[1] + '</a><br>';
      if (n && n.c_line)
        h += '<a class="cblock-link" href="#c-L' + n.c_line + '">its block in C: line ' +
             n.c_line + '</a><br>';
      if (info.seconds !== undefined && info.seconds !== null)
        h += 'time per run: ' + (info.seconds * 1e6).toFixed(1) + ' µs<br>';
    }
    panel.innerHTML = h || 'click a node or a kernel';
  }
  document.querySelectorAll('.node').forEach(function(g){
    g.addEventListener('click', function(ev){ ev.stopPropagation(); select(g.dataset.node, null); });
  });
  document.querySelectorAll('.cluster').forEach(function(g){
    g.addEventListener('click', function(){ select(null, g.dataset.step); });
  });
  document.querySelectorAll('a.c-link').forEach(function(a){
    a.addEventListener('click', function(){ highlightC(a.dataset.step); });
  });
  var m = /^#select=([\w-]+)$/.exec(location.hash);     // a link to a node: #select=e3
  if (m && byNode[m[1]]) select(m[1], null);
  document.documentElement.setAttribute('data-ready', '1');
})();
"""

_CATCH = ("window.__errors=[];window.addEventListener('error',function(e){"
          "window.__errors.push(String(e.message));document.documentElement.setAttribute("
          "'data-errors',window.__errors.join(' | '));});")


def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{cls}">{html.escape(text)}</pre>'


def _numbered(text: str, prefix: str) -> str:
    """``text`` as numbered lines, line ``n`` with id ``prefix + n`` (for links)."""
    return "".join(f"<span class='ln' id='{prefix}{i}' data-n='{i}'>{html.escape(ln) or ' '}"
                   f"</span>" for i, ln in enumerate(text.splitlines(), start=1))


def _diff(text: str) -> str:
    out = []
    for ln in text.splitlines():
        c = "add" if ln.startswith("+") and not ln.startswith("+++") else \
            "del" if ln.startswith("-") and not ln.startswith("---") else ""
        out.append(f'<span class="{c}">{html.escape(ln)}</span>')
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def render(data: dict) -> str:
    """The page for ``data`` (see :func:`plait.explorer.collect.collect`)."""
    prof = {r["step"]: r for r in (data["profile"] or [])}
    steps = {c["id"]: {"kind": c["kind"], "seconds": prof.get(c["id"], {}).get("seconds")}
             for c in data["clusters"]}
    keys = ("id", "cluster", "prim", "text", "stripe_kernel", "block", "stripe_line", "c_line")
    blob = json.dumps({"nodes": [{k: n.get(k) for k in keys} for n in data["nodes"]],
                       "steps": steps, "c_ranges": data["c_ranges"]}).replace("</", "<\\/")
    name = html.escape(data["name"])
    prims = sorted({n["prim"] for n in data["nodes"]})
    legend = "".join(f'<span style="background:{color(p)}">{html.escape(p)}</span>'
                     for p in prims)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>plait explorer: {name}"
             f"</title><script>{_CATCH}</script><style>{_CSS}</style></head><body>",
             f"<header><h1>plait explorer: {name}</h1><nav><a href='#graph-sec'>graph</a>"
             f"<a href='#partition'>kernels</a><a href='#kernels'>Tile and Stripe</a>"
             f"<a href='#c-sec'>C</a><a href='#profile'>profile</a>"
             f"<a href='#graph-text'>graph text</a></nav></header>",
             "<section id='graph-sec'><h2>Graph</h2><p>Each box is an equation, coloured by "
             "primitive; outlined groups are the steps that run them (kernels are fused C "
             "functions, host steps run in NumPy). Click a node for its kernel, Stripe and C."
             f"</p><div class='legend'>{legend}</div><div id='graphwrap'><div id='graphbox'>"
             f"{svg(data['nodes'], data['clusters'])}</div><div id='panel'>click a node or a "
             f"kernel</div></div></section>"]
    rows = []
    for c in data["clusters"]:
        if c["kind"] == "inputs":
            continue
        t = prof.get(c["id"], {}).get("seconds")
        rng = data["c_ranges"].get(c["id"])
        link = (f"<a class='c-link' data-step='{c['id']}' href='#c-L{rng[0]}'>lines "
                f"{rng[0]}-{rng[1]}</a>" if rng else "")
        rows.append(f"<tr><td><a href='#kernel-{c['id']}'>{html.escape(c['id'])}</a></td>"
                    f"<td>{c['kind']}</td><td>{html.escape(', '.join(c['prims']))}</td>"
                    f"<td>{'' if t is None else f'{t * 1e6:.1f} µs'}</td><td>{link}</td></tr>")
    parts.append("<section id='partition'><h2>Kernel partition</h2><table><tr><th>step</th>"
                  "<th>kind</th><th>equations</th><th>time</th><th>C</th></tr>"
                  + "".join(rows) + "</table></section>")
    ks = ["<section id='kernels'><h2>Tile and Stripe, kernel by kernel</h2>"]
    for k in data["kernels"]:
        n = k["name"]
        ks.append(f"<h3 id='kernel-{n}'>{n}: {html.escape(', '.join(k['prims']))}</h3>")
        ks.append("<b>Tile</b>" + _pre(k["tile"]))
        ks.append(f"<div id='stripe-{n}'><b>Stripe</b>")
        if k["same_as"]:
            ks.append(f"<p class='same'>same Tile program as "
                      f"<a href='#kernel-{k['same_as']}'>{k['same_as']}</a>: its Stripe and C "
                      f"function are reused</p>")
        for i, p in enumerate(k["passes"]):
            if i == 0:
                ks.append("<details><summary>lowered (before any pass)</summary>"
                          + _pre(p["text"]) + "</details>")
            elif p["changed"]:
                ks.append(f"<details><summary>pass {i}: {p['name']} (changed)</summary>"
                          + _diff(p["diff"]) + "<details><summary>program after it</summary>"
                          + _pre(p["text"]) + "</details></details>")
            else:
                ks.append(f"<div class='unchanged'>pass {i}: {p['name']} (no change)</div>")
        if k["passes"]:
            ks.append("<details open><summary>after all passes</summary><pre>"
                      + _numbered(k["passes"][-1]["text"], f"s-{n}-L") + "</pre></details>")
        ks.append("</div>")
    ks.append("</section>")
    parts += ks
    parts.append(f"<section id='c-sec'><h2>Generated C</h2><pre id='csrc'>"
                 f"{_numbered(data['c'], 'c-L')}</pre></section>")
    if data["profile"]:
        total = sum(r["seconds"] for r in data["profile"]) or 1.0
        prow = "".join(
            f"<tr><td><a href='#kernel-{r['step']}'>{html.escape(r['step'])}</a></td>"
            f"<td>{html.escape(r['computes'][:90])}</td><td>{r['seconds'] * 1e6:.1f} µs</td>"
            f"<td style='width:220px'><div class='bar' style='width:"
            f"{200 * r['seconds'] / total:.0f}px'></div></td></tr>" for r in data["profile"])
        parts.append(f"<section id='profile'><h2>Profile of a run</h2><p>"
                     f"{html.escape(data['profile_note'])}; {total * 1e6:.1f} µs in all</p>"
                     f"<table><tr><th>step</th><th>computes</th><th>time</th><th></th></tr>"
                     f"{prow}</table></section>")
    else:
        parts.append(f"<section id='profile'><h2>Profile of a run</h2><p>"
                     f"{html.escape(data['profile_note'] or 'not profiled')}</p></section>")
    parts.append("<section id='graph-text'><h2>Graph text</h2>" + _pre(data["graph"])
                 + "<b>partition</b>" + _pre(data["kernels_text"]) + "</section>")
    parts.append(f"<script type='application/json' id='data'>{blob}</script>"
                 f"<script>{_JS}</script></body></html>")
    return "\n".join(parts)
