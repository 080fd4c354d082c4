"""The docs stay true: the tutorial's code runs as written, and the generated reference
pages cover every error class and every PLAIT_* variable the package reads."""
import os
import re
import subprocess
import sys

import plait
from plait import errors
from plait.cli import reference

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_tutorial_code_runs(tmp_path):
    with open(os.path.join(ROOT, "docs", "tutorial.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 8
    script = tmp_path / "tutorial.py"            # a file: autograph reads its source
    script.write_text("\n".join(blocks))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + ROOT), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("[1. 1. 1. 1. 1.]")


def test_error_reference_has_one_anchor_per_class():
    text = reference.errors_markdown()
    classes = [v for v in vars(errors).values() if isinstance(v, type)
               and issubclass(v, BaseException) and v.__module__ == "plait.errors"]
    assert len(classes) >= 15
    for cls in classes:
        assert f"## {cls.__name__} {{#{cls.__name__.lower()}}}" in text
    # and a raised error points at its section
    try:
        plait.numpy.ones((2, 3)) @ plait.numpy.ones((2, 3))
    except errors.PlaitError as e:
        assert e.__notes__ == [f"error reference: docs/errors.md#{type(e).__name__.lower()}"]
        assert "error reference" not in str(e)       # the message itself is unchanged
    with open(os.path.join(ROOT, "docs", "errors.md")) as f:
        assert "{{ error_reference }}" in f.read()


def test_configuration_reference_lists_every_variable():
    text = reference.configuration_markdown()
    read = set()
    pkg = os.path.join(ROOT, "src", "plait")
    for root, _, files in os.walk(pkg):
        for name in files:
            if name.endswith(".py") and name != "reference.py":
                with open(os.path.join(root, name), encoding="utf-8") as f:
                    read |= set(re.findall(r"(?<![A-Za-z0-9_])PLAIT_[A-Z0-9_]*[A-Z0-9]\b",
                                           f.read()))
    read -= {"PLAIT_KERNEL", "PLAIT_KERNEL_WIDE", "PLAIT_NO_VECMATH"}   # macros of the generated C
    assert {"PLAIT_BACKEND", "PLAIT_CACHE_MAX_SIZE", "PLAIT_X64"} <= read
    for name in read:
        assert f"`{name}`" in text, name
    row = next(ln for ln in text.splitlines() if "`PLAIT_LOG_COMPILES`" in ln)
    assert "`log_compiles`" in row and "reason for the cache miss" in row
