"""What the command line works on: a function named ``FILE.py:FUNC`` (or ``module:FUNC``)
and its arguments described as ``"f32[128,784], f32[784], i32[]"``."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from typing import Callable

import numpy as np

from plait.errors import UsageError

_DTYPES = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32,
           "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32,
           "u64": np.uint64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
           "c64": np.complex64, "c128": np.complex128}
_SPEC = re.compile(r"\s*([a-z]+[0-9]*)\s*(?:\[([0-9,\s]*)\])?\s*")


def load_function(target: str) -> Callable:
    """The function ``FILE.py:FUNC`` (FUNC may be dotted, ``Model.loss``) or
    ``package.module:FUNC`` names. The file's folder goes first on ``sys.path``."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"{target!r} does not name a function: write FILE.py:FUNC "
                         f"(for example examples/mlp.py:loss) or module:FUNC")
    if path.endswith(".py"):
        if not os.path.isfile(path):
            raise UsageError(f"no such file: {path}")
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:
            sys.path.insert(0, folder)
        mod_name = "__plait_cli_" + re.sub(r"\W", "_", os.path.basename(path)[:-3])
        spec = importlib.util.spec_from_file_location(mod_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(path)
        except ImportError as e:
            raise UsageError(f"cannot import {path!r} ({e}); name a file as FILE.py:FUNC") \
                from None
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            found = sorted(n for n, v in vars(module).items()
                           if callable(v) and not n.startswith("_")
                           and getattr(v, "__module__", None) == module.__name__)
            raise UsageError(f"{path} has no {name!r}; functions defined there: "
                             f"{', '.join(found) or 'none'}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{target} is a {type(obj).__name__}, not a function")
    return obj


def parse_specs(text: str) -> list[tuple[tuple[int, ...], np.dtype]]:
    """``"f32[128,784], i32[], f64"`` -> ``[((128, 784), float32), ((), int32), ((), float64)]``."""
    out = []
    i = 0
    text = text.strip()
    while i < len(text):
        m = _SPEC.match(text, i)
        if not m or m.group(1) not in _DTYPES:
            raise UsageError(f"bad argument spec at {text[i:]!r}: write dtype[dims] with a "
                             f"dtype among {', '.join(_DTYPES)}, e.g. \"f32[128,784], i32[]\"")
        dims = m.group(2) or ""
        try:
            shape = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise UsageError(f"bad dimensions in {m.group(0).strip()!r}") from None
        out.append((shape, np.dtype(_DTYPES[m.group(1)])))
        i = m.end()
        if i < len(text):
            if text[i] != ",":
                raise UsageError(f"expected ',' between argument specs at {text[i:]!r}")
            i += 1
    return out


def example_arrays(specs, seed: int = 0) -> list[np.ndarray]:
    """Arrays of the given shapes and dtypes with reproducible values (normal floats,
    small non-negative integers, booleans)."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, dt in specs:
        if dt.kind == "f":
            a = rng.standard_normal(shape)
        elif dt.kind == "c":
            a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        elif dt.kind == "b":
            a = rng.random(shape) < 0.5
        else:
            a = rng.integers(0, 8, size=shape)
        out.append(np.asarray(a, dtype=dt))
    return out
