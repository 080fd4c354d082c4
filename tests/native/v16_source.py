"""The generated C as the compiler sees it on either side of ``#if PLAIT_V16`` (16-lane
AVX-512 loops, ``plait.codegen.c_cpu``), for tests that read kernel source."""
from __future__ import annotations

import re

_BRANCHES = re.compile(r"^[ \t]*#if PLAIT_V16\n(.*?)^[ \t]*#else\n(.*?)^[ \t]*#endif\n",
                       re.S | re.M)


def branch(src: str, v16: bool) -> str:
    """``src`` with each ``#if PLAIT_V16`` block replaced by its 16-lane (``v16``) or its
    scalar side."""
    return _BRANCHES.sub(lambda m: m.group(1 if v16 else 2), src)
