"""Random programs: shapes (with 0 and 1, broadcasting), dtypes, special values, op DAGs.

A program is grown node by node. A candidate node picks an op row, operands among
the values so far (recent ones more often, so chains form) or a Python scalar, and
static parameters; it is kept only if NumPy accepts it on the current values and the
result stays small. Gradient programs use float64 inputs in a moderate range and only
rows marked ``grad``, each applied only where its ``smooth`` domain check passes.
"""
from __future__ import annotations

import numpy as np

from plait.fuzz.compare import quiet
from plait.fuzz.ops import ALL, FLOATS, GRAD_OPS, OPS, OpSpec
from plait.fuzz.program import Node, Program, Scalar

MAX_ELEMENTS = 512
DIMS = (0, 1, 1, 2, 2, 3, 3, 4, 5)


def random_shape(rng: np.random.Generator, allow_zero: bool = True) -> tuple:
    nd = int(rng.choice([0, 1, 1, 2, 2, 3]))
    dims = DIMS if allow_zero and rng.random() < 0.15 else DIMS[1:]
    return tuple(int(rng.choice(dims)) for _ in range(nd))


def broadcast_variant(rng: np.random.Generator, shape: tuple) -> tuple:
    """``shape`` with leading dims dropped and some dims set to 1 (broadcasts with it)."""
    drop = int(rng.integers(0, len(shape) + 1)) if rng.random() < 0.3 else 0
    return tuple(1 if rng.random() < 0.2 else s for s in shape[drop:])


SPECIALS = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.0]


def random_values(rng: np.random.Generator, shape: tuple, dtype: str, special: bool) -> np.ndarray:
    """Values of ``dtype``: ordinary ones, plus NaN/±inf/±0/denormals/extremes if ``special``."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        r = rng.random()
        if r < 0.6:
            lo = max(-6, int(info.min))
            v = rng.integers(lo, 7, size=n)
        else:
            v = rng.integers(int(info.min), int(info.max), size=n, endpoint=True, dtype=np.int64
                             if dt != np.uint64 else np.uint64)
        v = np.asarray(v)
        if special and n:
            ext = np.array([info.min, info.max, 0, 1], dtype=object)
            pick = rng.random(n) < 0.2
            for i in np.flatnonzero(pick):
                v = v.astype(object) if v.dtype != object else v
                v[i] = ext[int(rng.integers(len(ext)))]
        return np.array([int(e) for e in np.ravel(v)], dtype=object).astype(dt).reshape(shape) \
            if n else np.zeros(shape, dt)
    if dt.kind == "c":
        real = np.float32 if dt == np.complex64 else np.float64
        re = random_values(rng, shape, np.dtype(real).name, False)
        im = random_values(rng, shape, np.dtype(real).name, False)
        return (re + 1j * im).astype(dt)
    info = np.finfo(dt)
    mode = rng.random()
    if mode < 0.5:
        v = rng.standard_normal(n) * 3
    elif mode < 0.7:
        v = rng.integers(-8, 9, size=n) / 2.0
    elif mode < 0.85:
        v = rng.uniform(0.05, 4.0, size=n) * rng.choice([-1, 1], size=n)
    else:
        exp = rng.uniform(np.log10(float(info.tiny)), np.log10(float(info.max)), size=n)
        v = 10.0 ** exp * rng.choice([-1, 1], size=n)
    if special and n:
        pick = rng.random(n) < 0.25
        extra = SPECIALS + [float(info.max), -float(info.max), float(info.smallest_subnormal),
                            -float(info.smallest_subnormal) * 3, float(info.tiny)]
        for i in np.flatnonzero(pick):
            v[i] = extra[int(rng.integers(len(extra)))]
    with np.errstate(all="ignore"):
        return np.asarray(v, np.float64).astype(dt).reshape(shape)


def random_scalar(rng: np.random.Generator, dtype: np.dtype):
    """A Python scalar that NEP 50 combines with ``dtype`` without overflow."""
    kind = dtype.kind
    r = rng.random()
    if kind == "b" or r < 0.1:
        return bool(rng.random() < 0.5)
    if kind in "iu" or r < 0.5:
        return int(rng.integers(0 if kind == "u" else -3, 4))
    if kind == "c" and r < 0.6:
        return complex(float(rng.integers(-2, 3)), 1.0)
    return float(rng.choice([0.5, -1.5, 2.0, 0.0, -0.0, 3.25, 1e-3]))


def _pick_operand(rng, n_values: int) -> int:
    if rng.random() < 0.5:
        return n_values - 1
    return int(rng.integers(n_values))


def _try_node(rng, spec: OpSpec, program: Program, ref: list, grad: bool):
    n = len(ref)
    args = []
    for j in range(spec.arity):
        if j == spec.arity - 1 and j > 0 and spec.scalar_ok and not grad and rng.random() < 0.2:
            args.append(Scalar(random_scalar(rng, ref[args[0]].dtype)))
        else:
            args.append(_pick_operand(rng, n))
    arrays = [ref[a] for a in args if isinstance(a, int)]
    if any(a.dtype.name not in spec.dtypes for a in arrays):
        return None
    if spec.same_dtype and len({a.dtype for a in arrays}) > 1:
        return None
    if spec.same_shape and len({a.shape for a in arrays}) > 1:
        return None
    params = spec.params(rng, [(a.shape, a.dtype.name) for a in arrays]) if spec.params else {}
    if params is None:
        return None
    node = Node(spec.name, tuple(args), params)
    operands = [ref[a] if isinstance(a, int) else a.value for a in args]
    if grad and spec.smooth is not None:
        try:
            if not quiet(spec.smooth, *operands):
                return None
        except Exception:   # noqa: BLE001 - operands NumPy rejects: not a candidate
            return None
    try:
        out = evaluate_numpy(program, node, operands)
    except Exception:
        return None
    if not isinstance(out, np.ndarray) or out.dtype.kind not in "biufc" or out.size > MAX_ELEMENTS:
        return None
    if grad and (out.dtype != np.float64 or not np.all(np.isfinite(out)) or np.max(np.abs(out), initial=0) > 1e4):
        return None
    return node, out


_CODE: dict = {}


def eval_source(src: str, env: dict):
    code = _CODE.get(src)
    if code is None:
        code = _CODE[src] = compile(src, "<fuzz>", "eval")
    return eval(code, env)


def _np_env():
    from plait.fuzz import oracles
    return {"np": np, "fz": oracles}


_ENV = None


def evaluate_numpy(program: Program, node: Node, operands: list):
    """NumPy's value of ``node`` on ``operands`` (arrays or scalars), as an ndarray."""
    global _ENV
    if _ENV is None:
        _ENV = _np_env()
    names = [f"a{j}" for j in range(len(operands))]
    src = node.spec.source(names, node.params, numpy=True)
    env = dict(_ENV, **dict(zip(names, operands)))
    out = quiet(eval_source, src, env)
    return out if isinstance(out, np.ndarray) else (np.asarray(out) if isinstance(out, np.generic) else out)


def random_program(rng: np.random.Generator, grad: bool = False, max_nodes: int = 6) -> Program:
    """A program of 1-3 inputs and 1-``max_nodes`` nodes (fewer if candidates keep failing)."""
    base = random_shape(rng, allow_zero=not grad)
    n_in = int(rng.integers(1, 4))
    special = (not grad) and rng.random() < 0.6
    inputs = []
    for i in range(n_in):
        shape = base if i == 0 else broadcast_variant(rng, base)
        if grad:
            v = rng.uniform(0.3, 2.0, size=shape) * (rng.choice([-1, 1], size=shape) if rng.random() < 0.5 else 1)
            inputs.append(np.asarray(v, np.float64))
        else:
            dt = ALL[int(rng.integers(len(ALL)))] if rng.random() < 0.6 else FLOATS[int(rng.integers(3))]
            inputs.append(random_values(rng, shape, dt, special))
    program = Program(inputs, [])
    ref = list(inputs)
    table = GRAD_OPS if grad else OPS
    target = int(rng.integers(1, max_nodes + 1))
    for _ in range(target * 8):
        if len(program.nodes) >= target:
            break
        spec = table[int(rng.integers(len(table)))]
        got = _try_node(rng, spec, program, ref, grad)
        if got is None:
            continue
        node, out = got
        program.nodes.append(node)
        ref.append(out)
    return program


def reference_values(program: Program) -> list:
    """NumPy's value of every value number (inputs, then nodes)."""
    ref = list(program.inputs)
    for node in program.nodes:
        ref.append(evaluate_numpy(program, node, [ref[a] if isinstance(a, int) else a.value for a in node.args]))
    return ref

