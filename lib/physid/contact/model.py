"""The differentiable contact model of Zhong, Dey & Chakraborty (2021).

A contact is resolved in contact space, where each contact i has ``k`` components, the normal
then the tangent(s): ``k = 1`` for a limit constraint, ``k = 2`` for a planar and ``k = 3`` for a
spatial frictional contact. With ``A = J M̂⁻¹ Jᵀ`` the contact-space inverse inertia (``J`` the
contact Jacobian, ``M̂⁻¹`` the inverse inertia restricted to the velocities that respect the
equality constraints) and ``v_C = J v`` the contact-space velocity before the impulse:

* **Compression**, problem (5): the impulse that minimises the kinetic energy after it (the
  maximum-dissipation principle),

  ``f^c = argmin ½ fᵀ A f + fᵀ v_C``  s.t.  ``‖f_t,i‖ ≤ μ_i f_n,i``,  ``f_n,i ≥ 0``;

* **Restitution**, problems (6)–(7): Poisson's hypothesis as the inequality
  ``f^r_n,i ≥ e_i f^c_n,i`` (6), so that a larger impulse may also remove penetration,

  ``f^r = argmin ½ fᵀ A f + fᵀ (v_C^{c+} - v*)``  s.t. the cone and (6),

  with ``v_C^{c+} = v_C + A f^c`` and the target velocity ``v*`` of penetration compensation
  (:func:`penetration_target`): ``v*_n,i = -d_i / (8 Δt)`` for a penetration ``d_i < 0``.

The total impulse is ``f^c + f^r``, and the generalised velocity jumps by ``M̂⁻¹ Jᵀ (f^c + f^r)``.
The regularised variant **CMr** replaces ``A`` by ``A + εI`` inside both problems (the velocity
update keeps ``A``), so each has a unique minimiser.

Under CM, ``A`` may be singular (more contact rows than the bodies' freedoms, or the pivoted
gyroscope). Then both problems have a unique velocity but possibly no unique impulse, and a
linear term with a component outside the range of ``A`` would make them unbounded. As the
authors project v* "to avoid an unbounded problem", the linear terms are projected (with a
detached projector) onto the range of ``A`` restricted to the components that are free
(tangents of frictionless contacts are fixed at zero); in exact arithmetic ``J v`` already lies
there, so the projection only removes constraint drift and the part of v* no impulse can reach.

Which impulse CM returns matters even though the velocity after compression is unique: Poisson's
bound (6) takes the compression impulse's normal components, so two minimisers of (5) lead to two
different restitutions. CM therefore returns the **least-norm** minimiser of each problem on every
path (with or without gradients, fast solver or cvxpylayers). The minimisers share ``A f``, so
they share the component of ``f`` in the range of ``A`` and differ in the null space ``N`` only;
CM solves with ``A + δ κ N Nᵀ`` (``κ`` the largest entry of ``A``, ``N`` an orthonormal basis
of the null space of ``A`` restricted to the free components, both detached, and ``δ`` =
:data:`LEAST_NORM`), whose unique minimiser tends to the least-norm one as δ → 0. Where ``A`` is
nonsingular nothing changes. The model then reproduces its own data to solver tolerance whether
or not gradients are on.

Both problems are solved by :mod:`physid.contact.fast` (batched, exact, implicit gradients) or by
:mod:`physid.contact.reference` (cvxpylayers). Where the fast solver cannot return a verified
exact solution with a gradient, the sample is re-solved by cvxpylayers and counted in a
:class:`SolverLog`; nothing is ever replaced by a zero impulse.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from physid.contact import active_sets, fast, reference
from physid.contact.reference import ContactSolverError
from physid.core.validate import (
    check_choice,
    check_count,
    check_in_range,
    check_positive,
    check_tensor,
)

__all__ = [
    "COMPENSATION",
    "ContactFrame",
    "ContactModel",
    "ContactSpace",
    "Resolution",
    "SolverLog",
    "LEAST_NORM",
    "VARIANTS",
    "check_inverse_inertia",
    "contact_frame",
    "authors_target",
    "penetration_target",
]

#: The model variants, CM (problems (5) and (7) as stated) and CMr (A + εI).
VARIANTS = ("CM", "CMr")
#: The solvers, the batched exact solver and cvxpylayers.
SOLVERS = ("fast", "reference")
#: Fraction of a penetration corrected per time step, v*_n = -COMPENSATION · d / Δt.
COMPENSATION = 1.0 / 8.0
#: Relative Tikhonov term δ with which CM selects the least-norm minimiser (module docstring).
LEAST_NORM = 1e-6
#: Interior-point tolerance of the fast solver, well below δ so that its active set is resolved.
SOLVER_TOL = 1e-11


@dataclass
class SolverLog:
    """Counts of contact problems (one per sample and phase) by how they were solved.

    Attributes:
        fast_exact: solved exactly by the fast solver (a verified active set).
        fast_enumerated: of those, solved by enumerating their active sets
            (:mod:`physid.contact.active_sets`), with no interior point.
        fast_unpolished: interior-point solutions used as they are, where no gradient was
            needed and the active-set system was singular (the minimiser is not unique).
        fallbacks: re-solved by cvxpylayers because the fast solver could not give a gradient
            or did not converge.
        reference: solved by cvxpylayers because the model asked for it.
        lcp: samples resolved by the LCP model (:mod:`physid.contact.lcp`, one problem each).
        contact_counts: samples resolved per contact-space size (number of contacts,
            dummies included).
        padded: dummy contacts added to batch samples with fewer contacts together.
        detected: samples with contacts per number of contacts the integrator detected
            (:func:`~physid.contact.integrate.apply_contacts`; dummies not counted).
    """

    fast_exact: int = 0
    fast_enumerated: int = 0
    fast_unpolished: int = 0
    fallbacks: int = 0
    reference: int = 0
    lcp: int = 0
    contact_counts: dict[int, int] = field(default_factory=dict)
    padded: int = 0
    detected: dict[int, int] = field(default_factory=dict)

    @property
    def problems(self) -> int:
        """All contact problems solved."""
        return self.fast_exact + self.fast_unpolished + self.fallbacks + self.reference + self.lcp

    def summary(self) -> str:
        """One line, e.g. for a chapter: how many problems each path solved."""
        text = (
            f"{self.problems} contact problems: {self.fast_exact} exact (fast; "
            f"{self.fast_enumerated} by enumeration), "
            f"{self.fast_unpolished} interior point without gradient (fast), "
            f"{self.fallbacks} cvxpylayers fallbacks, {self.reference} cvxpylayers"
        )
        return text + (f", {self.lcp} LCP" if self.lcp else "")


@dataclass(frozen=True)
class ContactSpace:
    """The contact-space data of B samples that share the contact count C.

    Attributes:
        factor: ``(B, r, C·k)`` with A = factorᵀ factor, the contact-space inverse inertia.
        velocity: ``(B, C·k)`` contact-space velocity v_C = J v before the impulse; a positive
            normal component means separating.
        target: ``(B, C·k)`` penetration-compensating target velocity v*.
        mu: ``(B, C)`` friction coefficients, ≥ 0 (unused for k = 1).
        cor: ``(B, C)`` coefficients of restitution, in [0, 1].
        k: components per contact (1, 2 or 3).
        padding: how many of the B·C contacts are dummies that batch samples with fewer
            contacts together (:func:`physid.contact.integrate.contact_bucket`).
    """

    factor: Tensor
    velocity: Tensor
    target: Tensor
    mu: Tensor
    cor: Tensor
    k: int
    padding: int = 0

    def __post_init__(self) -> None:
        check_count("k", self.k, minimum=1, maximum=3)
        check_count("padding", self.padding, minimum=0)
        check_tensor("mu", self.mu, shape=(None, None), nonnegative=True, dtype=torch.float64)
        B, C = self.mu.shape
        m = C * self.k
        check_tensor("factor", self.factor, shape=(B, None, m), dtype=torch.float64)
        check_tensor("velocity", self.velocity, shape=(B, m), dtype=torch.float64)
        check_tensor("target", self.target, shape=(B, m), dtype=torch.float64)
        check_tensor("cor", self.cor, shape=(B, C), nonnegative=True, dtype=torch.float64)
        if bool((self.cor > 1).any()):
            raise ValueError(f"cor (restitution) must lie in [0, 1], found {self.cor.max():g}")

    @classmethod
    def _made(cls, factor: Tensor, velocity: Tensor, target: Tensor, mu: Tensor, cor: Tensor,
              k: int, padding: int = 0) -> ContactSpace:
        """A space of tensors the library made itself from checked inputs
        (:func:`physid.contact.integrate.apply_contacts`): the checks of ``__post_init__``,
        host synchronisations among them, are not repeated at every step."""
        space = object.__new__(cls)
        for name, value in (("factor", factor), ("velocity", velocity), ("target", target),
                            ("mu", mu), ("cor", cor), ("k", k), ("padding", padding)):
            object.__setattr__(space, name, value)
        return space

    @property
    def batch(self) -> int:
        return self.mu.shape[0]

    @property
    def n_contacts(self) -> int:
        return self.mu.shape[1]

    @property
    def A(self) -> Tensor:
        """The contact-space inverse inertia factorᵀ factor (positive semi-definite)."""
        return self.factor.transpose(1, 2) @ self.factor


@dataclass(frozen=True)
class Resolution:
    """The impulses of the two phases, ``(B, C, k)`` each, and the velocity after them."""

    compression: Tensor
    restitution: Tensor
    velocity_after: Tensor

    @property
    def impulse(self) -> Tensor:
        """The total impulse f^c + f^r."""
        return self.compression + self.restitution


#: Eigenvalues at most this fraction of the largest count as zero (the null space of CM).
NULL_RTOL = 1e-9


def _null_basis(A: Tensor, rtol: float = NULL_RTOL) -> Tensor:
    """Detached orthonormal basis of the null space of each A, ``(B, m, m)`` with zero columns
    for the range (all zero where A ≻ 0)."""
    with torch.no_grad():
        values, vectors = torch.linalg.eigh(A)
        null = values <= rtol * values.abs().amax(-1, keepdim=True).clamp_min(1e-300)
        return vectors * null[:, None, :]


def _free_null_basis(A: Tensor, mu: Tensor, k: int) -> Tensor | None:
    """:func:`_null_basis` of A restricted to the free components, or None where it is empty
    for every sample.

    The tangents of frictionless contacts are not free (their f_t is 0): A loses their rows and
    columns, and the basis leaves them out, so the projector ``I - N Nᵀ`` onto the free range
    keeps their velocity (which fixes the direction friction would take at μ > 0).

    The eigendecomposition is skipped where a Cholesky factorisation shows every eigenvalue of
    the free block above the threshold of :func:`_null_basis`: with ``r`` the largest absolute
    row sum (at least the largest eigenvalue), ``A - 10⁻⁹ r I`` on the free block (``r I`` on
    the rest) positive definite (the same answer, at a fraction of the cost).
    """
    free = torch.ones(*mu.shape, k, dtype=torch.bool, device=A.device)
    if k >= 2:
        free[..., 1:] = (mu != 0)[..., None]
    free = free.flatten(1)
    block = free[:, :, None] & free[:, None, :]
    with torch.no_grad():
        reduced = A.detach() * block
        bound = reduced.abs().sum(-1).amax(-1)[:, None, None]  # ≥ the largest eigenvalue
        eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
        shifted = torch.where(block, reduced, bound * eye) - (NULL_RTOL * bound) * eye
        if bool((torch.linalg.cholesky_ex(shifted)[1] == 0).all()):
            return None
    return _null_basis(A * block) * free[:, :, None]


def _project(P: Tensor, v: Tensor) -> Tensor:
    return (P @ v[..., None])[..., 0]


@dataclass(frozen=True)
class ContactModel:
    """The contact model: variant, regularisation and solver.

    Attributes:
        variant: ``"CM"`` (problems (5) and (7)) or ``"CMr"`` (A + εI in both).
        reg: ε of CMr.
        solver: ``"fast"`` (:mod:`physid.contact.fast`, with cvxpylayers as the counted
            fallback) or ``"reference"`` (cvxpylayers for every problem).
        fallback: whether the fast solver may fall back to cvxpylayers; if not, a sample it
            cannot solve raises :class:`~physid.contact.reference.ContactSolverError`.
        batched_reference: one batched cvxpylayers call per group, or one call per sample.
        compensation: fraction of a penetration removed per step, through the target v*
            (:func:`penetration_target`; 0 switches penetration compensation off); it must lie
            in [0, 1].
        least_norm: under CM, return the least-norm minimiser (the default; see the module
            docstring); False solves the problems as stated and returns whichever minimiser the
            solver finds, for comparison.
        authors_target: replace the target v* by the authors' projection of it
            (:func:`authors_target`, as their code does before solving) instead of taking it as
            it is; the book's projection onto the range of ``A`` still follows under CM.
    """

    variant: str = "CM"
    reg: float | Tensor = 0.01
    solver: str = "fast"
    fallback: bool = True
    batched_reference: bool = True
    compensation: float = COMPENSATION
    least_norm: bool = True
    authors_target: bool = False

    def __post_init__(self) -> None:
        check_choice("variant", self.variant, VARIANTS)
        check_choice("solver", self.solver, SOLVERS)
        if isinstance(self.reg, Tensor) and self.reg.requires_grad:
            check_tensor("reg", self.reg, shape=(), positive=True, dtype=torch.float64)
        else:
            object.__setattr__(self, "reg", check_positive("reg", self.reg))
        compensation = check_in_range("compensation", self.compensation, 0.0, 1.0)
        object.__setattr__(self, "compensation", compensation)
        for name in ("fallback", "batched_reference", "least_norm", "authors_target"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}")

    def group_limit(self, k: int, device: torch.device) -> int:
        """The contact count up to which the integrator resolves samples in one group, padded
        to the largest count among them: on the CPU the fast solver enumerates each sample's
        active sets in a compiled loop that stops at the first set that verifies, so a dummy
        contact costs little there, and one group saves the per-group tensor operations (up to
        :data:`~physid.contact.active_sets.MAX_COMPILED` contacts); elsewhere, and for
        cvxpylayers, whose cost grows with the padded size, a group per count (0)."""
        if self.solver == "fast" and device.type == "cpu":
            return active_sets.MAX_COMPILED.get(k, 0)
        return 0

    def resolve(self, space: ContactSpace, log: SolverLog | None = None) -> Resolution:
        """Solve compression (5) then restitution (7) for every sample of ``space``."""
        log = SolverLog() if log is None else log
        A = space.A
        B, C, k = space.batch, space.n_contacts, space.k
        log.contact_counts[C] = log.contact_counts.get(C, 0) + B
        log.padded += space.padding
        if self.variant == "CMr":
            eye = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
            A_solve = A + self.reg * eye
            factor_solve = torch.linalg.cholesky(A_solve).transpose(1, 2)
            project = None
        else:
            null = _free_null_basis(A, space.mu, k)
            A_solve, factor_solve = A, space.factor
            # Where no sample's A is singular, the projector is the identity and the least-norm
            # term zero: both are left out (the same numbers, fewer operations).
            singular = null is not None and bool(null.any())
            project = None
            if singular:
                project = torch.eye(A.shape[-1], dtype=A.dtype, device=A.device) - null @ null.mT
            if singular and self.least_norm:
                # A vanishing Tikhonov term on the null space of A.
                scale = A.detach().abs().flatten(1).amax(-1).clamp_min(1e-300)
                root = (LEAST_NORM * scale).sqrt()[:, None, None] * null.mT
                A_solve = A + root.mT @ root
                factor_solve = torch.cat([space.factor, root], 1)
        parts = (space.factor, space.velocity, space.target, space.mu, space.cor, A_solve)
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in parts)

        def phase(c: Tensor, lb: Tensor) -> Tensor:
            if project is not None:
                c = _project(project, c)
            return self._solve(A_solve, factor_solve, c, space.mu, lb, k, needs_grad, log)

        compression = phase(space.velocity, torch.zeros_like(space.mu))
        after_compression = space.velocity + (A @ compression.reshape(B, -1, 1))[..., 0]
        lb = space.cor * compression[..., 0]
        restitution = phase(after_compression - space.target, lb)
        after = after_compression + (A @ restitution.reshape(B, -1, 1))[..., 0]
        return Resolution(compression=compression, restitution=restitution, velocity_after=after)

    def _solve(self, A, factor, c, mu, lb, k, needs_grad: bool, log: SolverLog) -> Tensor:
        if self.solver == "reference":
            log.reference += c.shape[0]
            return reference.solve(factor, c, mu, lb, k, batched=self.batched_reference)
        solution = fast._solve(A, c, mu, lb, k, tol=SOLVER_TOL)  # its inputs made here
        unusable = ~solution.polished & (~solution.converged | needs_grad)
        unpolished = ~solution.polished & ~unusable
        flags = torch.stack([solution.polished, solution.enumerated, unpolished, unusable])
        exact, enumerated, n_unpolished, n_unusable = flags.sum(1).tolist()  # one synchronisation
        log.fast_exact += exact
        log.fast_enumerated += enumerated
        log.fast_unpolished += n_unpolished
        if n_unusable == 0:
            return solution.impulse
        index = unusable.nonzero()[:, 0]
        if not self.fallback:
            raise ContactSolverError(
                f"the fast contact solver could not solve {len(index)} of {c.shape[0]} problems "
                f"exactly with a gradient (samples {index.tolist()[:10]}), and fallback=False"
            )
        log.fallbacks += len(index)
        redo = reference.solve(
            factor[index], c[index], mu[index], lb[index], k, batched=self.batched_reference
        )
        return solution.impulse.index_put((index,), redo)


def penetration_target(
    distance: Tensor, k: int, dt: float, fraction: float = COMPENSATION
) -> Tensor:
    """The target velocity v* of penetration compensation (Appendix G of the paper).

    Args:
        distance: ``(B, C)`` signed distances (negative: penetration).
        k: components per contact.
        dt: the time step.
        fraction: share of the penetration removed per step (1/8, as in the authors' code),
            in [0, 1].

    Returns:
        ``(B, C·k)``: ``v*_n = -fraction · min(d, 0) / dt`` on the normals, zero on tangents.
    """
    check_tensor("distance", distance, shape=(None, None), dtype=torch.float64)
    check_count("k", k, minimum=1, maximum=3)
    dt = check_positive("dt", dt)
    fraction = check_in_range("fraction", fraction, 0.0, 1.0)
    return _target(distance, k, dt, fraction)


def _target(distance: Tensor, k: int, dt: float, fraction: float) -> Tensor:
    """:func:`penetration_target` of arguments already checked."""
    normal = -fraction * distance.clamp(max=0.0) / dt
    target = torch.zeros(*distance.shape, k, dtype=distance.dtype, device=distance.device)
    target[..., 0] = normal
    return target.flatten(1)


def authors_target(
    target: Tensor, jacobian: Tensor, constraint_jacobian: Tensor | None = None
) -> Tensor:
    """The target v* as the authors' code projects it before solving (DiffCoSim's
    ``get_v_star_c_w_J_e`` and ``get_dv_wo_J_e``), detached: the generalised velocity ``u =
    J⁺ v*`` (least squares where the contacts outnumber the freedoms, least norm otherwise),
    its Euclidean projection onto the velocities the equality constraints allow, ``Π u = u −
    Gᵀ (G Gᵀ)⁻¹ G u``, and back to contact space: ``J Π J⁺ v*``.

    The book's model instead projects v* (with the rest of the linear term) orthogonally onto
    the range of ``A = J M̂⁻¹ Jᵀ`` in contact space. Both land in that range, and both leave a
    reachable v* of an unconstrained system as it is; with equality constraints they are
    different projections (the chapter measures by how much). Where ``J`` has full rank this is
    the authors' formula exactly; where it has not, the pseudo-inverse stands in for their
    solve (which fails, or keeps the wrong columns of a QR factor).

    Args:
        target: ``(B, C·k)`` the target v* (:func:`penetration_target`).
        jacobian: ``(B, C·k, N)`` contact Jacobian J (zero rows for padding are allowed).
        constraint_jacobian: ``(B, E, N)`` equality-constraint Jacobian G, or None.
    """
    check_tensor("jacobian", jacobian, shape=(None, None, None), dtype=torch.float64)
    B, m, N = jacobian.shape
    check_tensor("target", target, shape=(B, m), dtype=torch.float64)
    if constraint_jacobian is not None:
        check_tensor(
            "constraint_jacobian", constraint_jacobian, shape=(B, None, N), dtype=torch.float64
        )
    with torch.no_grad():
        u = torch.linalg.pinv(jacobian) @ target[..., None]  # (B, N, 1)
        if constraint_jacobian is not None and constraint_jacobian.shape[1]:
            G = constraint_jacobian
            u = u - G.mT @ torch.linalg.solve(G @ G.mT, G @ u)
        return (jacobian @ u)[..., 0]


def check_inverse_inertia(inv_mass: Tensor, rtol: float = 1e-10) -> None:
    """Raise a ValueError unless ``inv_mass`` (``(N, N)`` or ``(B, N, N)``) is symmetric PSD.

    A TypeError for anything but a float64 tensor.
    """
    check_tensor("inv_mass", inv_mass, dtype=torch.float64)
    if inv_mass.dim() not in (2, 3) or inv_mass.shape[-1] != inv_mass.shape[-2]:
        raise ValueError(f"inv_mass must be square, got shape {tuple(inv_mass.shape)}")
    scale = inv_mass.detach().abs().amax().clamp_min(1e-300)
    if bool(((inv_mass - inv_mass.transpose(-1, -2)).abs() > rtol * scale).any()):
        raise ValueError("inv_mass (the inverse inertia) must be symmetric")
    smallest = torch.linalg.eigvalsh(inv_mass.detach()).amin()
    if float(smallest) < -1e-9 * float(scale):
        raise ValueError(
            f"inv_mass (the inverse inertia) must be positive semi-definite, "
            f"its smallest eigenvalue is {float(smallest):.3g}"
        )


@dataclass(frozen=True)
class ContactFrame:
    """The generalised-coordinate side of a contact space.

    With ``M⁻¹ = L Lᵀ`` and the projector ``P = I - Lᵀ Gᵀ (G M⁻¹ Gᵀ)⁻¹ G L`` onto the
    velocities allowed by the equality constraints (Jacobian ``G``), the constrained inverse
    inertia is ``M̂⁻¹ = L P Lᵀ`` and ``A = J M̂⁻¹ Jᵀ = FᵀF`` with ``F = P Lᵀ Jᵀ``: positive
    semi-definite by construction (the subject of the paper's Appendix E). An impulse ``f``
    changes the velocity by ``M̂⁻¹ Jᵀ f = L F f``.

    Attributes:
        factor: ``(B, N, C·k)`` the factor F.
        chol: ``(N, N)`` or ``(B, N, N)`` the factor L of M⁻¹.
    """

    factor: Tensor
    chol: Tensor

    def velocity_change(self, impulse: Tensor) -> Tensor:
        """``(B, N)`` the jump M̂⁻¹ Jᵀ f of the generalised velocity for ``(B, C, k)`` impulses."""
        y = (self.factor @ impulse.reshape(impulse.shape[0], -1, 1))[..., 0]
        return (self.chol @ y[..., None])[..., 0]


def contact_frame(
    inv_mass: Tensor, jacobian: Tensor, constraint_jacobian: Tensor | None = None
) -> ContactFrame:
    """The :class:`ContactFrame` of contact Jacobians ``(B, C·k, N)``.

    Args:
        inv_mass: ``(N, N)`` or ``(B, N, N)`` inverse inertia M⁻¹ (positive definite).
        jacobian: ``(B, C·k, N)`` contact Jacobian J (rows: normal, tangents per contact).
        constraint_jacobian: ``(B, E, N)`` Jacobian G of the equality constraints, or None.
    """
    check_inverse_inertia(inv_mass)
    N = inv_mass.shape[-1]
    check_tensor("jacobian", jacobian, shape=(None, None, N), dtype=torch.float64)
    if constraint_jacobian is not None:
        shape = (jacobian.shape[0], None, N)
        check_tensor("constraint_jacobian", constraint_jacobian, shape=shape, dtype=torch.float64)
    return _frame(inv_mass, jacobian, constraint_jacobian)


def _frame(inv_mass: Tensor, jacobian: Tensor, constraint_jacobian: Tensor | None
           ) -> ContactFrame:
    """:func:`contact_frame` of arguments already checked (the Cholesky factor's failure is
    still raised: positive semi-definite is checked, definite is not)."""
    chol, info = torch.linalg.cholesky_ex(inv_mass)
    if bool((info != 0).any()):
        raise ValueError("inv_mass (the inverse inertia) must be positive definite")
    lt_jt = chol.transpose(-1, -2) @ jacobian.transpose(1, 2)
    if constraint_jacobian is not None:
        g_l = constraint_jacobian @ chol  # G L, (B, E, N)
        gram = g_l @ g_l.transpose(1, 2)  # G M⁻¹ Gᵀ
        lt_jt = lt_jt - g_l.transpose(1, 2) @ torch.linalg.solve(gram, g_l @ lt_jt)
    return ContactFrame(factor=lt_jt, chol=chol)
