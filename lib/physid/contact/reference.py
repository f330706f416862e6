"""The reference implementation of the contact problems: cvxpylayers, as in Zhong et al. (2021).

Each phase of the contact model is the disciplined parametrised program

    minimise  ½ ‖F f‖² + cᵀ f
    subject to  f_n,i ≥ lb_i,  ‖f_t,i‖ ≤ μ_i f_n,i   (the friction cone, for k ≥ 2),

with parameters ``F`` (a factor of the contact-space inverse inertia, A = FᵀF), ``c``, ``μ``
and ``lb``: problem (5) has ``c = v_C`` and ``lb = 0``; problem (7) has ``c = v_C^{c+} - v*`` and
``lb = e f^c_n``. Unlike the authors' code, which builds a new ``CvxpyLayer`` for every collision,
one layer is built per (contact count, components per contact, factor rows) and cached
(:func:`contact_layer`). The authors' pattern is kept as a peer for the benchmarks:
``solve(..., per_call=True)``, or every :func:`solve` inside :func:`layers_built_per_call`, builds
the ``cp.Problem`` and its ``CvxpyLayer`` anew for every layer call (:func:`build_layer`), and
with ``batched=False`` for every sample. The solver is diffcp with SCS, at a tolerance
(``eps = 1e-10``) tight enough for impulses and gradients to be compared with
:mod:`physid.contact.fast` at 1e-6; SCS's default (1e-4) leaves errors of order 1e-4 in the
impulses and much larger ones in the gradients. An answer that SCS itself marks inaccurate
(diffcp only warns) is an error here (:class:`ContactSolverError`), never a result.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

import cvxpy as cp
import torch
from cvxpylayers.torch import CvxpyLayer
from torch import Tensor

from physid.core.validate import check_count, check_tensor

#: Solver arguments passed to diffcp/SCS.
SOLVER_ARGS = {"eps": 1e-10, "max_iters": 100_000}


class ContactSolverError(RuntimeError):
    """A contact problem could not be solved (cvxpylayers failed, or no fallback was allowed)."""


#: Whether :func:`solve` builds its layers per call when not told (see
#: :func:`layers_built_per_call`).
_per_call_default = False


def build_layer(n_contacts: int, k: int, rows: int) -> torch.nn.Module:
    """A new layer for ``n_contacts`` contacts of ``k`` components and an F of ``rows`` rows.

    Its parameters, in order, are ``F`` (rows × C·k), ``c`` (C·k), ``μ`` (C, non-negative; not
    for limit constraints, k = 1) and ``lb`` (C); its variable is ``f`` (C·k). Every call
    builds (and canonicalises) the problem again, as the authors' code does per collision;
    :func:`contact_layer` is the cached one.
    """
    check_count("n_contacts", n_contacts)
    check_count("k", k, minimum=1, maximum=3)
    check_count("rows", rows)
    m = n_contacts * k
    f = cp.Variable(m)
    factor = cp.Parameter((rows, m))
    c = cp.Parameter(m)
    mu = cp.Parameter(n_contacts, nonneg=True)
    lb = cp.Parameter(n_contacts)
    constraints = []
    for i in range(n_contacts):
        normal = f[i * k]
        constraints.append(normal >= lb[i])
        if k >= 2:
            constraints.append(cp.norm(f[i * k + 1 : (i + 1) * k], 2) <= mu[i] * normal)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(factor @ f) + c @ f), constraints)
    parameters = [factor, c, mu, lb] if k >= 2 else [factor, c, lb]
    return CvxpyLayer(problem, parameters=parameters, variables=[f])


@lru_cache(maxsize=64)
def contact_layer(n_contacts: int, k: int, rows: int) -> torch.nn.Module:
    """The cached :func:`build_layer` (one layer per contact count, k and factor rows)."""
    return build_layer(n_contacts, k, rows)


@contextmanager
def layers_built_per_call() -> Iterator[None]:
    """Within this block, :func:`solve` builds a new layer for every layer call unless told
    otherwise (``per_call=False``): the authors' pattern, for a caller such as
    :class:`~physid.contact.model.ContactModel` that does not pass ``per_call``. Not
    thread-safe: the setting is module-wide."""
    global _per_call_default
    previous = _per_call_default
    _per_call_default = True
    try:
        yield
    finally:
        _per_call_default = previous


def solve(
    factor: Tensor,
    c: Tensor,
    mu: Tensor,
    lb: Tensor,
    k: int,
    batched: bool = True,
    solver_args: dict | None = None,
    per_call: bool | None = None,
) -> Tensor:
    """Solve a batch of contact problems with cvxpylayers.

    Args:
        factor: ``(B, r, C·k)`` with A = factorᵀ factor.
        c: ``(B, C·k)`` linear term.
        mu: ``(B, C)`` friction coefficients.
        lb: ``(B, C)`` lower bounds on the normal impulses.
        k: components per contact.
        batched: one batched layer call (diffcp solves the batch) or one call per sample, as in
            the authors' code.
        solver_args: diffcp/SCS arguments; :data:`SOLVER_ARGS` if None (``{}`` gives SCS's
            defaults, as the authors' code uses).
        per_call: build the problem and its layer anew for every layer call (with
            ``batched=False``, for every sample: the authors' pattern) instead of using the
            cached :func:`contact_layer`; None takes the setting of
            :func:`layers_built_per_call` (off outside it).

    Returns:
        ``(B, C, k)`` impulses, differentiable through diffcp.

    Raises:
        ContactSolverError: if SCS fails on a sample or marks its answer inaccurate (naming
            the sample).
    """
    k = check_count("k", k, minimum=1, maximum=3)
    check_tensor("factor", factor, shape=(None, None, None), dtype=torch.float64)
    B, rows, m = factor.shape
    check_tensor("mu", mu, shape=(B, None), nonnegative=True, dtype=torch.float64)
    C = mu.shape[1]
    if m != C * k:
        raise ValueError(f"factor must have C·k = {C * k} columns, got {m}")
    check_tensor("c", c, shape=(B, m), dtype=torch.float64)
    check_tensor("lb", lb, shape=(B, C), dtype=torch.float64)
    if per_call is None:
        per_call = _per_call_default
    if not isinstance(per_call, bool):
        raise TypeError(f"per_call must be True, False or None, got {per_call!r}")
    args = SOLVER_ARGS if solver_args is None else solver_args
    from diffcp.cone_program import SolverError

    def one(index: slice) -> Tensor:
        params = [factor[index], c[index]] + ([mu[index]] if k >= 2 else []) + [lb[index]]
        where = f"contact sample(s) {index.start}..{index.stop - 1} of {B} ({C} contacts)"
        layer = build_layer(C, k, rows) if per_call else contact_layer(C, k, rows)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                (f,) = layer(*params, solver_args=dict(args))
        except (SolverError, RuntimeError) as error:
            raise ContactSolverError(f"cvxpylayers failed on {where}: {error}") from error
        inaccurate = [w for w in caught if "inaccurate" in str(w.message).lower()]
        for w in caught:
            if w not in inaccurate:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if inaccurate:
            raise ContactSolverError(
                f"SCS marked its answer on {where} inaccurate ({inaccurate[0].message}); "
                f"solver arguments {args}"
            )
        return f

    if batched:
        f = one(slice(0, B))
    else:
        f = torch.cat([one(slice(b, b + 1)) for b in range(B)])
    return f.reshape(B, C, k)
