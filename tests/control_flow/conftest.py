"""Fixtures for the control-flow tests: run each function eagerly and under jit."""
import pytest

import plait


@pytest.fixture(params=["eager", "jit"])
def mode(request):
    """Wrap a function: identity (eager evaluation) or ``plait.jit``."""
    return (lambda f: f) if request.param == "eager" else plait.jit
