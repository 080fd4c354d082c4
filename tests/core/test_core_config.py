"""Every setting lives in plait/config.py: one documented row per ``PLAIT_*`` variable,
read there and nowhere else, and each changeable with ``plait.config.update``."""
from __future__ import annotations

import pathlib
import re

import pytest

import plait
from plait import config as _cfg_instance
from plait.config import SETTINGS, Config

ROOT = pathlib.Path(plait.__file__).parent

# Names spelled PLAIT_* in plait's sources that are not environment variables: C
# preprocessor macros of the generated code.
C_MACROS = {"PLAIT_KERNEL", "PLAIT_KERNEL_WIDE", "PLAIT_DRIVER", "PLAIT_NO_VECMATH", "PLAIT_V16",
            "PLAIT_NO_V16"}

# Modules allowed to use os.environ themselves, with the reason.
ENVIRON_ALLOWED = {
    "config.py": "the one reader of the environment",
    "fuzz/supervise.py": "a developer tool: builds the environment of its child processes",
    "fuzz/__main__.py": "a developer tool: points its children's kernel cache at a "
                        "temporary directory before plait is imported",
}


def _sources():
    for path in sorted(ROOT.rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text()


def test_only_config_reads_the_environment():
    bad = [f"{rel}:{i}: {line.strip()}" for rel, text in _sources()
           if rel not in ENVIRON_ALLOWED
           for i, line in enumerate(text.splitlines(), 1)
           if re.search(r"\bos\.(environ|getenv|putenv)\b|\benviron\[", line)]
    assert not bad, ("read settings through plait.config (add a row to config.SETTINGS "
                     "or a function at the end of config.py):\n  " + "\n  ".join(bad))


def test_every_plait_variable_is_a_setting():
    known = {s.env for s in SETTINGS}
    used = {}
    for rel, text in _sources():
        for m in re.finditer(r"(?<![A-Za-z0-9_])PLAIT_[A-Z0-9_]+", text):
            if m.group() not in C_MACROS:
                used.setdefault(m.group(), rel)
    missing = {name: rel for name, rel in used.items() if name not in known}
    assert not missing, f"PLAIT_* names without a row in config.SETTINGS: {missing}"


def test_settings_are_documented_and_unique():
    names = [s.name for s in SETTINGS]
    envs = [s.env for s in SETTINGS]
    assert len(set(names)) == len(names) and len(set(envs)) == len(envs)
    for s in SETTINGS:
        assert s.env.startswith("PLAIT_") and len(s.doc) > 20, s
    text = _cfg_instance.describe()
    for s in SETTINGS:
        assert f"{s.name} (${s.env})" in text


_SAMPLE = {bool: ("1", True), int: ("7", 7), float: ("2.5", 2.5), str: ("xyz", "xyz")}


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_each_setting_from_the_environment_and_update(setting, monkeypatch):
    kind = type(setting.default) if setting.default is not None else str
    text, value = _SAMPLE[kind]
    if setting.name == "x64":
        text, value = "0", False            # the default is on
    monkeypatch.setenv(setting.env, text)
    fresh = Config()
    if setting.name == "cache_dir":         # read at each use, not at startup
        assert fresh.cache_dir is None and fresh.kernel_cache_dir() == "xyz"
    else:
        assert getattr(fresh, setting.name) == value
    old = getattr(plait.config, setting.name)
    try:
        plait.config.update(setting.name, value)
        assert getattr(plait.config, setting.name) == value
    finally:
        plait.config.update(setting.name, old)


def test_update_rejects_unknown_names():
    with pytest.raises(AttributeError, match="no setting 'no_such'.*backend"):
        plait.config.update("no_such", 1)


def test_lazy_switches_follow_config():
    from plait import lazy
    assert not lazy.is_eager()
    plait.config.update("lazy_eager", True)
    try:
        assert lazy.is_eager()
        with lazy.eager_mode(False):        # a block wins over the process setting
            assert not lazy.is_eager()
    finally:
        plait.config.update("lazy_eager", False)
    plait.config.update("lazy_sync", True)
    try:
        assert lazy.is_sync()
    finally:
        plait.config.update("lazy_sync", False)


def test_cache_dir_setting_wins_over_the_variable(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAIT_CACHE_DIR", str(tmp_path / "env"))
    c = Config()
    assert c.kernel_cache_dir() == str(tmp_path / "env")
    c.update("cache_dir", str(tmp_path / "set"))
    assert c.kernel_cache_dir() == str(tmp_path / "set")
    monkeypatch.delenv("PLAIT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert Config().kernel_cache_dir() == str(tmp_path / "plait")
