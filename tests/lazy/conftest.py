"""Each lazy test starts with an empty trace cache and zeroed lazy counters."""
import pytest

from plait import lazy


@pytest.fixture(autouse=True)
def fresh_lazy_state():
    lazy.step()
    lazy.clear_cache()
    lazy.reset_metrics()
    yield

