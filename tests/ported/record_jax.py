"""Record JAX's runs of the JAX-style programs into jax_recorded.py (run once, with JAX
installed, from the repository root): ``python tests/ported/record_jax.py``.

The programs' text is plait/examples/jax_style/*.py with ``plait`` swapped for ``jax``
in the import lines; JAX runs in its default float32 mode.
"""
import os
import pprint
import sys

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import jax  # noqa: E402

from ported_run import run  # noqa: E402
from plait.examples.jax_style import PROGRAMS  # noqa: E402

if __name__ == "__main__":
    ref = {name: run(name, "jax") for name in PROGRAMS}
    path = os.path.join(os.path.dirname(__file__), "jax_recorded.py")
    with open(path, "w") as f:
        f.write(f'"""JAX {jax.__version__} runs of plait/examples/jax_style (float32 mode), '
                f'recorded by\nrecord_jax.py: per program the losses and a summary of '
                f'every parameter array."""\n\nREF = ')
        f.write(pprint.pformat(ref, width=100, sort_dicts=True))
        f.write("\n")
    print("wrote", path)
