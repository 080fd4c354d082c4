"""Tile: the contraction language (Einstein notation) and elementwise expressions.

Public API: :class:`Affine`, :func:`var`, :func:`variables`, :class:`Constraint`
(``i < N``), :class:`Tensor`, :class:`Access`, :class:`Contraction`,
:class:`Elementwise`, :class:`Call`, :class:`Input`, :class:`Const`,
:class:`IndexValue`, :class:`Program`, :class:`TileBuilder` and the helpers
:func:`contraction`, :func:`elementwise`, :func:`call`, :func:`constant`, :func:`iota`,
plus :func:`format_program` / :func:`format_stmt` for text.
Lowering to Stripe lives in :mod:`plait.stripe.lower` (Stripe imports Tile, not back).
"""

from .affine import Affine, Constraint, const, var, variables
from .builder import TileBuilder, as_expr, call, constant, contraction, elementwise, iota
from .ir import (
    AGGS,
    COMBS,
    Access,
    Call,
    Combination,
    Const,
    Contraction,
    Elementwise,
    Expr,
    IndexValue,
    Input,
    Program,
    Statement,
    Tensor,
    TileError,
    expr_inputs,
    stmt_inputs,
)
from .printer import format_expr, format_program, format_stmt

# the user-facing language (``plait.tile.op`` ...) and its primitive ``tile_op``
from .lang import contract, exp, indices, log, maximum, minimum, op, sigmoid, sqrt, tanh
from . import user_op as _user_op  # noqa: F401  (registers the tile_op primitive)

__all__ = [
    # user API
    "op", "indices", "contract", "exp", "log", "tanh", "sqrt", "sigmoid", "maximum", "minimum",
    # internal Tile IR
    "Affine", "Constraint", "const", "var", "variables", "TileBuilder", "as_expr", "call",
    "constant", "contraction", "elementwise", "iota", "AGGS", "COMBS", "Access", "Call",
    "Combination", "Const", "Contraction", "Elementwise", "Expr", "IndexValue", "Input",
    "Program", "Statement", "Tensor", "TileError", "expr_inputs", "stmt_inputs",
    "format_expr", "format_program", "format_stmt",
]
