"""A fuzz program: concrete inputs and a small DAG of op-table calls, printable as Python.

Values are numbered: inputs first (``x0, x1, ...``), then one value per node
(``v3, v4, ...``). A node's operands are value numbers or Python scalars
(:class:`Scalar`). Every node is an output, so each engine's value of every node
can be checked against the NumPy oracle applied to *that engine's* operands (a
local oracle: rounding differences never compound along a chain).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from plait.fuzz.ops import BY_NAME, OpSpec


@dataclasses.dataclass(frozen=True)
class Scalar:
    """A Python scalar operand (weakly typed under NEP 50)."""
    value: Any


@dataclasses.dataclass
class Node:
    op: str
    args: tuple      # int (value number) or Scalar
    params: dict

    @property
    def spec(self) -> OpSpec:
        return BY_NAME[self.op]


@dataclasses.dataclass
class Program:
    inputs: list          # numpy arrays
    nodes: list           # Node

    def name(self, i: int) -> str:
        return f"x{i}" if i < len(self.inputs) else f"v{i}"

    def arg_names(self, node: Node) -> list[str]:
        return [self.name(a) if isinstance(a, int) else repr(a.value) for a in node.args]

    def node_source(self, k: int, numpy: bool) -> str:
        node = self.nodes[k]
        return node.spec.source(self.arg_names(node), node.params, numpy)

    def copy(self) -> "Program":
        return Program(list(self.inputs), [Node(n.op, tuple(n.args), dict(n.params)) for n in self.nodes])

    def to_python(self, engine: str = "native") -> str:
        """A standalone script comparing ``engine`` with NumPy on every node."""
        n_in = len(self.inputs)
        ins = ", ".join(self.name(i) for i in range(n_in))
        lines = ["import numpy as np", "import plait, plait.numpy as pnp, plait.lax as lax, plait.nn as nn"]
        if any("fz." in self.node_source(k, True) for k in range(len(self.nodes))):
            lines.append("from plait.fuzz import oracles as fz")
        if any("fzc." in self.node_source(k, False) for k in range(len(self.nodes))):
            lines.append("from plait.fuzz import custom as fzc")
        lines.append("")
        for i, x in enumerate(self.inputs):
            lines.append(f"x{i} = {array_source(x)}")
        outs = ", ".join(self.name(n_in + k) for k in range(len(self.nodes)))
        for numpy in (False, True):
            lines += ["", f"def {'f_np' if numpy else 'f'}({ins}):"]
            for k in range(len(self.nodes)):
                lines.append(f"    {self.name(n_in + k)} = {self.node_source(k, numpy)}")
            lines.append(f"    return ({outs},)")
        if engine == "grad":
            return "\n".join(lines + [
                "", f"def loss({ins}):", f"    return sum(pnp.sum(v) for v in f({ins}))",
                "", f"def loss_np({ins}):", f"    return sum(np.sum(v) for v in f_np({ins}))",
                "", f"g = plait.grad(loss, argnums=tuple(range({n_in})))({ins})",
                "h = 1e-6",
                f"for i, x in enumerate(({ins},)):",
                "    for idx in np.ndindex(*x.shape):",
                f"        a = [np.array(v) for v in ({ins},)]; b = [np.array(v) for v in ({ins},)]",
                "        a[i][idx] += h; b[i][idx] -= h",
                "        print(i, idx, 'plait', np.asarray(g[i])[idx], 'FD', (loss_np(*a) - loss_np(*b)) / (2 * h))"]) + "\n"
        call = (f"f(*plait.device_put(({ins},)))" if engine == "eager"
                else f"plait.jit(f, backend={engine!r})({ins})")
        lines += ["", f"got = {call}", "with np.errstate(all='ignore'):",
                  f"    want = f_np({ins})",
                  "for g, w in zip(got, want):",
                  "    print(repr(np.asarray(g)), '  NumPy:', repr(np.asarray(w)))"]
        return "\n".join(lines) + "\n"


def _elem(v, kind: str) -> str:
    if kind == "c":
        return f"complex({_elem(v.real, 'f')}, {_elem(v.imag, 'f')})"
    if kind == "f":
        f = float(v)
        if math.isnan(f):
            return "-np.nan" if math.copysign(1.0, f) < 0 else "np.nan"
        if math.isinf(f):
            return "np.inf" if f > 0 else "-np.inf"
        return repr(f)
    if kind == "b":
        return repr(bool(v))
    return repr(int(v))


def array_source(x: np.ndarray) -> str:
    """Python source rebuilding ``x`` exactly (dtype, shape, NaN sign, -0.0)."""
    x = np.asarray(x)
    kind = x.dtype.kind
    flat = "[" + ", ".join(_elem(v, kind) for v in x.ravel()) + "]"
    src = f"np.array({flat}, dtype=np.{x.dtype.name})"
    if x.ndim != 1:
        src += f".reshape({tuple(x.shape)!r})"
    return src
