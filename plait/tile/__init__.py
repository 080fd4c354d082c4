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
