"""Headless Chromium (Debian's /usr/bin/chromium) for page tests: the DOM after the
page's scripts ran, and a screenshot decoded to pixels (a small PNG reader)."""
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

import numpy as np

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def chromium() -> str:
    """The browser's path; CI (.ci/run) installs Debian's chromium package."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("headless Chromium is needed for the explorer test: "
                         "apt-get install chromium (the CI script installs it)")


def _run(url: str, *extra: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, url],
                              capture_output=True, text=True, timeout=120)


def dump_dom(url: str) -> str:
    """The serialized DOM once the page's scripts ran."""
    r = _run(url, "--virtual-time-budget=3000", "--dump-dom")
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def screenshot(url: str, width: int = 1400, height: int = 1000) -> np.ndarray:
    """The rendered page as an ``(height, width, channels)`` uint8 array."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "shot.png")
        r = _run(url, f"--window-size={width},{height}", f"--screenshot={path}")
        assert r.returncode == 0 and os.path.exists(path), r.stderr[-2000:]
        with open(path, "rb") as f:
            return read_png(f.read())


def read_png(data: bytes) -> np.ndarray:
    """Decode an 8-bit, non-interlaced RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    ch = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), np.int32)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) & 255
        else:                          # Sub, Average, Paeth depend on the left pixel
            cur = np.zeros(stride, np.int32)
            for x in range(stride):
                a = cur[x - ch] if x >= ch else 0
                b, c = prev[x], (prev[x - ch] if x >= ch else 0)
                if f == 1:
                    pred = a
                elif f == 3:
                    pred = (a + b) // 2
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                cur[x] = (line[x] + pred) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch).astype(np.uint8)
