"""``plait.lax.linalg``: matrix decompositions and solves (like ``jax.lax.linalg``).

Primitives: ``cholesky``, ``triangular_solve``, ``lu``, ``qr``, ``eigh``, ``eig``,
``svd``, ``schur`` and ``tridiagonal_solve``, and ``solve`` (``lu`` and ``lu_solve`` as
one primitive, which ``plait.numpy.linalg.solve`` binds under ``jit``). Every one works on stacks: the last two axes
are the matrix, any leading axes are batch axes. The impls call LAPACK through
NumPy, or through SciPy where NumPy has no entry point (``triangular_solve`` and
``lu`` fall back to NumPy code without SciPy; ``tridiagonal_solve``, ``schur`` and
the left eigenvectors of ``eig`` need SciPy and say so).

Values, as in JAX: a failed factorization does not raise here (values are unknown
under ``jit``); ``cholesky`` of a matrix that is not positive definite gives NaNs,
and a singular ``lu`` gives a ``U`` with a zero on its diagonal (solves through it
give inf/NaN). ``plait.numpy.linalg`` raises NumPy's errors on concrete values.

Values only: a graph that reads only ``eigh``'s eigenvalues or ``svd``'s singular
values runs the decomposition without vectors (LAPACK ``jobz='N'``): the primitives'
``dce`` rules rebind them with ``compute_eigenvectors=False`` / ``compute_uv=False``.

Derivatives (standard matrix calculus; ``plait/transforms/RULES.md``):

- ``cholesky`` and ``eigh`` read one triangle (LAPACK's convention) and the real part
  of the diagonal; their derivatives are those of that reading, so a tangent in the
  other triangle contributes nothing (JAX instead symmetrizes the tangent; both
  agree on Hermitian tangents).
- ``eigh``: ``dv = v (F ∘ vᴴ dA v)`` with ``F_ij = 1/(w_j - w_i)``; for repeated
  eigenvalues the eigenvectors are not differentiable and the tangent holds inf/NaN
  (eigenvalue tangents stay finite). Eigenvectors are fixed up to a phase; the
  tangent is the one with ``Im(vᴴ dv)`` zero on the diagonal, so only
  phase-invariant functions of complex eigenvectors have finite-difference-checkable
  derivatives. No derivative of a partial decomposition (``subset_by_index``).
- ``svd``: JAX's rule; singular vectors of repeated singular values are not
  differentiable (inf/NaN), zero singular values contribute no ``1/s`` terms.
  ``full_matrices=True`` with vectors is differentiable only for square matrices.
- ``eig``: eigenvalues and right eigenvectors (normalized to unit norm) for distinct
  eigenvalues; not the left eigenvectors.
- ``qr``: needs ``m >= n`` (and ``m == n`` for ``full_matrices=True``), as in JAX.
- ``lu``: square matrices; the permutation is piecewise constant (zero tangent).
- ``schur`` has no derivative (as in JAX): its jvp rule raises a clear error.
- ``triangular_solve``, ``tridiagonal_solve`` and ``solve`` are linear in the
  right-hand side (transposes are solves with the transposed matrix); ``solve``'s
  tangent is ``a⁻¹ (db - da x)``.

The package: ``factorizations`` (``cholesky``, ``lu``, ``qr``), ``eigen`` (``eigh``,
``eig``, ``svd``, ``schur``) and ``solves`` (``triangular_solve``,
``tridiagonal_solve``), over the shared checks and helpers of ``_common``.
"""

from plait.lax.linalg.eigen import eig, eig_p, eigh, eigh_p, schur, schur_p, svd, svd_p
from plait.lax.linalg.factorizations import (cholesky, cholesky_p, lu, lu_p,
                                             lu_pivots_to_permutation, lu_solve, qr, qr_p,
                                             solve_p)
from plait.lax.linalg.solves import (triangular_solve, triangular_solve_p, tridiagonal_solve,
                                     tridiagonal_solve_p)

__all__ = ["cholesky", "triangular_solve", "lu", "qr", "eigh", "eig", "svd", "schur",
           "tridiagonal_solve", "lu_pivots_to_permutation", "lu_solve",
           # the primitives (as in jax.lax.linalg), for rules of other backends
           "cholesky_p", "eig_p", "eigh_p", "lu_p", "qr_p", "schur_p", "solve_p", "svd_p",
           "triangular_solve_p", "tridiagonal_solve_p"]
