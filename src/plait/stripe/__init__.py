"""Stripe: the nested-polyhedral kernel IR (data model, text, verifier, interpreter).

Modules, one job each: :mod:`.ir` (data model and IR rules), :mod:`.affine` (affine
expressions and their parser), :mod:`.polyhedron` (exact integer-polyhedron reasoning),
:mod:`.printer` / :mod:`.parser` (text format), :mod:`.verify` (verifier),
:mod:`.intrinsics` (scalar op table), :mod:`.interp` (NumPy reference interpreter and the
special registry), :mod:`.lower` (Tile -> Stripe), :mod:`.tiling` (``apply_tile``).
"""

from plait.errors import (SolverBudgetError, StripeParseError, StripeRuntimeError,
                          StripeVerifyError, TileLowerError)

from .affine import Affine, const, parse_affine, var, variables
from .interp import SPECIALS, register_special, run
from .intrinsics import INTRINSICS, register_intrinsic
from .ir import (
    AGG_OPS,
    Barrier,
    Block,
    Buffer,
    Constant,
    Index,
    Intrinsic,
    Load,
    LoadIndex,
    Program,
    Refinement,
    Special,
    Statement,
    Store,
    agg_identity,
    np_dtype,
    replace_stmt,
    row_major_strides,
    walk_blocks,
)
from .lower import lower
from .parser import parse, parse_block, parse_program
from .printer import format_block, format_program, to_text
from .tiling import apply_tile
from .verify import verify
