"""The explorer page: its content against the pipeline's own stage texts, and the page
in headless Chromium (no script errors, a node's links, the graph on the screenshot);
``plait explore`` on the command line."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np

import plait
import plait.numpy as pnp
from plait.explorer.layout import color

import headless_chromium

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def f(w, x):
    y = pnp.tanh(x @ w)
    z = pnp.sort(y, axis=-1)              # a host step between two kernels
    return pnp.sum(z[:, -1] * 2.0) + pnp.sum(y)


def test_page_content_and_browser(tmp_path):
    w = np.linspace(-1, 1, 24).reshape(6, 4)
    x = np.linspace(0, 1, 18).reshape(3, 6)
    path = plait.explore(f, w, x, path=str(tmp_path / "f.html"))
    page = open(path, encoding="utf-8").read()
    lowered = plait.jit(f).lower(w, x)
    kernels = lowered.as_text("kernels").splitlines()
    assert any(k.startswith("host: sort") for k in kernels)
    names = [k.split(":")[0] for k in kernels if not k.startswith("host")]
    assert len(names) >= 2
    # self-contained: nothing is fetched
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page
    # one node per equation of the graph the kernels run, each step outlined
    graph = lowered.as_text("graph")
    n_eqns = sum(1 for ln in graph.splitlines() if re.match(r"^  [^ ].* = ", ln))
    assert page.count('class="node"') == n_eqns + 2            # + the two arguments
    for n in names:
        assert f'id="cluster-{n}"' in page and f"id='kernel-{n}'" in page
        assert f"id='stripe-{n}'" in page
    assert 'id="cluster-host0"' in page
    # the stages: Tile and Stripe texts as the pipeline prints them, every pass, the C
    import html as _html
    body = _html.unescape(page)
    first_tile = lowered.as_text("tile").split("\n\n")[0]
    assert first_tile in body
    assert lowered.as_text("stripe-opt").split("\n\n")[0] in body
    from plait.backends.native.target import host_target
    for name, _ in host_target().passes:
        assert re.search(rf"pass \d+: {name} \((changed|no change)\)", body)
    c = lowered.as_text("c")
    m = re.search(r"data-n='(\d+)'>PLAIT_KERNEL(_WIDE)? int64_t k0\(", page)
    assert m and re.match(r"PLAIT_KERNEL(_WIDE)? int64_t k0\(",
                          c.splitlines()[int(m.group(1)) - 1])
    assert "Profile of a run" in page and re.search(r"\d+\.\d µs in all", page)

    # in the browser: scripts run without errors; a node links to its kernel, Stripe, C
    url = "file://" + os.path.abspath(path)
    root = re.search(r"<html([^>]*)>", headless_chromium.dump_dom(url)).group(1)
    assert 'data-ready="1"' in root and "data-errors" not in root
    broken = tmp_path / "broken.html"            # the check sees a script error
    broken.write_text(page.replace("var D = JSON.parse(", "var D = JSON.parse(undefinedName + "))
    root = re.search(r"<html([^>]*)>",
                     headless_chromium.dump_dom("file://" + str(broken))).group(1)
    assert "data-errors" in root and "undefinedName" in root and "data-ready" not in root
    node = re.search(r'id="node-(e\d+)" data-node="e\d+" data-step="k0"', page).group(1)
    dom = headless_chromium.dump_dom(url + f"#select={node}")
    panel = re.search(r'<div id="panel">(.*?)</div>', dom, re.S).group(1)
    assert 'href="#kernel-k0"' in panel and 'href="#stripe-k0"' in panel
    lo, hi = map(int, re.search(r'href="#c-L\d+">C lines (\d+)-(\d+)', panel).groups())
    assert re.match(r"PLAIT_KERNEL(_WIDE)? int64_t k0\(", c.splitlines()[lo - 1])
    # its Stripe block (highlighted in the optimized program) and where it starts in C
    s_line, block = re.search(r'href="#s-k0-L(\d+)">([\w+]+)</a>', panel).groups()
    assert block.startswith("kernel_0")
    stripe_lines = lowered.as_text("stripe-opt").split("\n\n")[0].splitlines()
    assert stripe_lines[int(s_line) - 1].endswith(f"( // {block}")
    c_line = int(re.search(r'href="#c-L(\d+)">its block in C', panel).group(1))
    assert lo < c_line <= hi and c.splitlines()[c_line - 1].strip().startswith(f"/* {block}:")
    assert re.search(rf'class="ln hl" id="s-k0-L{s_line}"|id="s-k0-L{s_line}"[^>]*class="ln hl"',
                     dom)
    assert dom.count('class="ln hl"') == hi - lo + 2            # the C lines + the block
    assert f'id="node-{node}" data-node="{node}" data-step="k0" class="node sel"' in dom \
        or f'class="node sel" id="node-{node}"' in dom
    # the screenshot shows the graph: the nodes' colours fill boxes on it
    shot = headless_chromium.screenshot(url)
    for prim in ("tanh", "dot_general", "sort"):
        rgb = [int(color(prim)[i:i + 2], 16) for i in (1, 3, 5)]
        assert (shot[..., :3] == rgb).all(-1).sum() > 500, prim


PROGRAM = textwrap.dedent("""
    import plait.numpy as pnp

    def loss(w, x):
        return pnp.sum(pnp.tanh(x @ w) ** 2)
""")


def test_explore_command(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    out = tmp_path / "page.html"
    r = subprocess.run([sys.executable, "-m", "plait", "explore", f"{prog}:loss", "--grad",
                        "--args", "f32[8,4], f32[2,8]", "-o", str(out)], capture_output=True,
                       text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + ROOT), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    page = out.read_text()
    assert "plait explorer: grad(loss)" in page and 'id="cluster-k0"' in page
