"""A differential fuzzer for plait: random programs against NumPy, in every engine.

Random programs (small DAGs over the op table in ``ops.py``: shapes with 0 and 1,
broadcasting, every dtype, NaN/inf/-0/denormal inputs) run eagerly, under
``jit(backend="interp")`` and under ``jit(backend="native")``; each node's value in
each engine is compared with NumPy on that engine's own operands, with per-op,
per-dtype tolerances (``tolerance.py``). Failing programs are shrunk to a minimal
reproducer printed as runnable Python (``shrink.py``). Gradient mode checks
``grad`` against central finite differences and ``jvp`` against ``vjp``; threads mode
traces and runs eagerly from several threads at once and checks that nothing leaks
between them.

Run ``python -m plait.fuzz --minutes 20`` for a campaign (``--help`` for options).
Nothing else in plait imports this package.
"""
