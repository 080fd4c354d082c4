"""Golden text: matmul and a 3x3 convolution in Tile and Stripe form, before and after
apply_tile (the conv tiling is the paper's Figure 5: 3x4 output tiles with a halo)."""

from plait.stripe import apply_tile, lower, parse, to_text, verify
from plait.tile import format_program
from stripe_programs import conv2d, matmul

MATMUL_TILE = """\
function matmul(A: f32[4, 8], B: f32[8, 16]) -> (C: f32[4, 16]) {
  C[i, j : 4, 16] = +(A[i, k] * B[k, j])
}
"""

MATMUL_STRIPE = """\
program matmul (
  in A f32(4, 8)
  in B f32(8, 16)
  out C f32(4, 16) init add
)
#program
block [] ( // main
  in A[0, 0] f32(4, 8):(8, 1)
  in B[0, 0] f32(8, 16):(16, 1)
  out C[0, 0]:assign f32(4, 16):(16, 1)
) {
  0: #agg_add #comb_mul #contraction #kernel
  block [i:4, j:16, k:8] ( // kernel_0
    // C[i, j : 4, 16] = +(A[i, k] * B[k, j])
    out C[i, j]:add f32(1, 1):(16, 1)
    #contraction in A[i, k] f32(1, 1):(8, 1)
    #contraction in B[k, j] f32(1, 1):(16, 1)
  ) {
    0: $A = load(A)
    1: $B = load(B)
    2: $C = mul($A, $B)
    3: C = store($C)
  }
}
"""

MATMUL_TILED = """\
#agg_add #comb_mul #contraction #kernel
block [i:2, j:2, k:3] ( // kernel_0
  // C[i, j : 4, 16] = +(A[i, k] * B[k, j])
  out C[2*i, 8*j]:add f32(2, 8):(16, 1)
  #contraction in A[2*i, 3*k] f32(2, 3):(8, 1)
  #contraction in B[3*k, 8*j] f32(3, 8):(16, 1)
) {
  0:
  block [i:2, j:8, k:3, ko = 3*k] ( // kernel_0_inner
    -k - ko + 7 >= 0
    out C[i, j]:add f32(1, 1):(16, 1)
    #contraction in A[i, k] f32(1, 1):(8, 1)
    #contraction in B[k, j] f32(1, 1):(16, 1)
  ) {
    0: $A = load(A)
    1: $B = load(B)
    2: $C = mul($A, $B)
    3: C = store($C)
  }
}
"""

CONV_TILE = """\
function conv(I: f32[1, 12, 16, 8], K: f32[3, 3, 8, 16]) -> (O: f32[1, 12, 16, 16]) {
  O[n, y, x, co : 1, 12, 16, 16] = +(I[n, ky + y - 1, kx + x - 1, ci] * K[ky, kx, ci, co])
}
"""

CONV_STRIPE = """\
program conv (
  in I f32(1, 12, 16, 8)
  in K f32(3, 3, 8, 16)
  out O f32(1, 12, 16, 16) init add
)
#program
block [] ( // main
  in I[0, 0, 0, 0] f32(1, 12, 16, 8):(1536, 128, 8, 1)
  in K[0, 0, 0, 0] f32(3, 3, 8, 16):(384, 128, 16, 1)
  out O[0, 0, 0, 0]:assign f32(1, 12, 16, 16):(3072, 256, 16, 1)
) {
  0: #agg_add #comb_mul #contraction #kernel
  block [ci:8, co:16, kx:3, ky:3, n:1, x:16, y:12] ( // kernel_0
    // O[n, y, x, co : 1, 12, 16, 16] = +(I[n, ky + y - 1, kx + x - 1, ci] * K[ky, kx, ci, co])
    ky + y - 1 >= 0
    -ky - y + 12 >= 0
    kx + x - 1 >= 0
    -kx - x + 16 >= 0
    out O[n, y, x, co]:add f32(1, 1, 1, 1):(3072, 256, 16, 1)
    #contraction in I[n, ky + y - 1, kx + x - 1, ci] f32(1, 1, 1, 1):(1536, 128, 8, 1)
    #contraction in K[ky, kx, ci, co] f32(1, 1, 1, 1):(384, 128, 16, 1)
  ) {
    0: $I = load(I)
    1: $K = load(K)
    2: $O = mul($I, $K)
    3: O = store($O)
  }
}
"""

CONV_TILED = """\
#agg_add #comb_mul #contraction #kernel
block [ci:1, co:1, kx:1, ky:1, n:1, x:4, y:4] ( // kernel_0
  // O[n, y, x, co : 1, 12, 16, 16] = +(I[n, ky + y - 1, kx + x - 1, ci] * K[ky, kx, ci, co])
  out O[n, 3*y, 4*x, 16*co]:add f32(1, 3, 4, 16):(3072, 256, 16, 1)
  #contraction in I[n, 3*ky + 3*y - 1, 3*kx + 4*x - 1, 8*ci] f32(1, 5, 6, 8):(1536, 128, 8, 1)
  #contraction in K[3*ky, 3*kx, 8*ci, 16*co] f32(3, 3, 8, 16):(384, 128, 16, 1)
) {
  0:
  block [ci:8, co:16, kx:3, ky:3, n:1, x:4, y:3, xo = 4*x, yo = 3*y] ( // kernel_0_inner
    ky + y + yo - 1 >= 0
    -ky - y - yo + 12 >= 0
    kx + x + xo - 1 >= 0
    -kx - x - xo + 16 >= 0
    out O[n, y, x, co]:add f32(1, 1, 1, 1):(3072, 256, 16, 1)
    #contraction in I[n, ky + y, kx + x, ci] f32(1, 1, 1, 1):(1536, 128, 8, 1)
    #contraction in K[ky, kx, ci, co] f32(1, 1, 1, 1):(384, 128, 16, 1)
  ) {
    0: $I = load(I)
    1: $K = load(K)
    2: $O = mul($I, $K)
    3: O = store($O)
  }
}
"""


def test_matmul_golden():
    prog, _ = matmul(4, 8, 16)
    assert format_program(prog) == MATMUL_TILE
    sp = lower(prog)
    assert to_text(sp) == MATMUL_STRIPE
    tiled = apply_tile(sp.entry.stmts[0], {"i": 2, "j": 8, "k": 3})
    assert to_text(tiled) == MATMUL_TILED
    assert parse(MATMUL_STRIPE) == sp and parse(MATMUL_TILED) == tiled


def test_conv_golden():
    prog, _ = conv2d(n=1, h=12, w=16, ci=8, co=16)
    assert format_program(prog) == CONV_TILE
    sp = lower(prog)
    verify(sp)
    assert to_text(sp) == CONV_STRIPE
    tiled = apply_tile(sp.entry.stmts[0], {"x": 4, "y": 3})
    assert to_text(tiled) == CONV_TILED
    assert parse(CONV_STRIPE) == sp and parse(CONV_TILED) == tiled
