"""Small dense linear systems inside compiled loops: one Gaussian elimination for every part.

The compiled kernels solve many tiny systems, one at a time, inside their loops: the KKT systems
of the contact problems' active sets (:mod:`physid.contact.active_sets`), the single cone's
Newton steps and inverse Jacobian (:mod:`physid.contact.single_cone`) and the saddle system of
the pushing kernel's minimum-norm point (:mod:`physid.pushing.rigid_kernel`). A LAPACK call
through numpy costs more than such a system's arithmetic, so they share :func:`solve_in_place`,
which numba inlines into each caller.
"""

from __future__ import annotations

import numba

__all__ = ["solve_in_place"]


@numba.njit(cache=True, fastmath=False, nogil=True, inline="always")
def solve_in_place(K, Y, size, width, tiny):
    """Solve ``K[:size, :size] X = Y[:size, :width]`` by Gaussian elimination with partial
    pivoting (the first row of largest magnitude) and back substitution; ``X`` replaces ``Y``
    and ``K`` is overwritten. Returns False, leaving ``Y`` partly reduced, where a pivot's
    magnitude is at most ``tiny`` (``0.0``: exactly zero, as LAPACK's ``info > 0``)."""
    for j in range(size):
        p = j
        for i in range(j + 1, size):
            if abs(K[i, j]) > abs(K[p, j]):
                p = i
        if abs(K[p, j]) <= tiny:
            return False
        if p != j:
            for col in range(size):
                K[j, col], K[p, col] = K[p, col], K[j, col]
            for col in range(width):
                Y[j, col], Y[p, col] = Y[p, col], Y[j, col]
        for i in range(j + 1, size):
            r = K[i, j] / K[j, j]
            if r != 0.0:
                for col in range(j, size):
                    K[i, col] -= r * K[j, col]
                for col in range(width):
                    Y[i, col] -= r * Y[j, col]
    for j in range(size - 1, -1, -1):
        for col in range(width):
            acc = Y[j, col]
            for q in range(j + 1, size):
                acc -= K[j, q] * Y[q, col]
            Y[j, col] = acc / K[j, j]
    return True
