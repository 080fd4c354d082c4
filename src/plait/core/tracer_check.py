"""Helper to reject tracers where only concrete values make sense."""
from plait.core.trace import Tracer
from plait.errors import ConcretizationError


def reject_tracer(x, what: str) -> None:
    """Raise a ConcretizationError if ``x`` is a tracer."""
    if isinstance(x, Tracer):
        raise ConcretizationError(f"{what} needs a concrete array, but got a traced value "
                                  f"of type {x.aval.str_short()}")
