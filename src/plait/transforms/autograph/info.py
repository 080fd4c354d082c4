"""Static facts about one converted statement, handed from the rewrite to the runtime.

The rewritten code passes a :class:`StmtInfo` to every ``if_stmt``/``while_stmt``/
``for_stmt``/``ifexp`` call so run-time errors can name the user's variables and
their ORIGINAL source lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from plait.transforms.autograph.jumps import RETVAL, DO_RETURN


@dataclass
class StmtInfo:
    """One ``if``/``while``/``for``/conditional expression of the user's function."""

    kind: str                      # "if", "while", "for", "conditional expression"
    filename: str
    lineno: int
    function: str
    inputs: tuple[str, ...] = ()   # parameter names of the generated functions
    outputs: tuple[str, ...] = ()  # phi values (if) / loop-carried values (loops)
    lines_a: dict[str, int] = field(default_factory=dict)  # first assignment: body
    lines_b: dict[str, int] = field(default_factory=dict)  # first assignment: else

    def where(self, line: int | None = None) -> str:
        """``file.py:12``."""
        return f"{self.filename}:{self.lineno if line is None else line}"

    @property
    def what(self) -> str:
        """``the `if` at file.py:12 (in f)``."""
        return f"the `{self.kind}` at {self.where()} (in {self.function})"

    @staticmethod
    def is_special(name: str) -> bool:
        """Names the rewrite made up, whose value may be a don't-care on some paths."""
        return name == RETVAL

    @staticmethod
    def display(name: str) -> str:
        """How a (possibly generated) variable is named in messages."""
        if name == RETVAL:
            return "the return value"
        if name == DO_RETURN:
            return "the 'returned' flag"
        if name.startswith("ag__break_"):
            return "the `break` flag"
        if name.startswith("ag__cont_"):
            return "the `continue` flag"
        return f"variable '{name}'"
