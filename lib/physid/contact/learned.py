"""The learned models of Zhong, Dey & Chakraborty (2021): CLNN and CHNN with a contact model.

Both models work in Cartesian coordinates with the system's *known* equality constraints
(Finzi et al. 2020) and learn

* the inverse inertia M⁻¹ (:class:`MassModel`): a log-mass per body and, for extended bodies,
  a log second moment per unit mass per body axis;
* the potential V (:class:`Potential`): an MLP [N → 256 → 256 → 256 → 1] with Softplus;
* the contact coefficients (:class:`ContactParameters`): friction μ ≥ 0 and restitution
  0 ≤ e ≤ 1 per candidate contact (one shared value on homogeneous tasks), and optionally the
  regularisation ε of CMr.

Collision detection uses the system's true geometry, as in the paper. One time step of either
model is Algorithm 1 of the paper: one fixed RK4 step of the smooth learned dynamics, then the
velocity jump of the contact model (:func:`physid.contact.integrate.apply_contacts`) with the
learned M⁻¹, μ and e.

**CLNN** (:class:`ContactCLNN`), state (x, v): with F = -∇V and G = ∂Φ/∂x,

    v̇ = M⁻¹ (F - Gᵀ λ),   (G M⁻¹ Gᵀ) λ = G M⁻¹ F + vᵀ ∇²Φ v

(:func:`physid.contact.mechanics.acceleration`, the constrained Lagrangian dynamics).

**CHNN** (:class:`ContactCHNN`), state z = (x, p) with p = M v: the Hamiltonian
H = ½ pᵀ M⁻¹ p + V(x) and the projected Hamiltonian vector field of Finzi et al. (2020),

    ż = P(J ∇H),   P(w) = w - J DΦ (DΦᵀ J DΦ)⁻¹ DΦᵀ w,

where DΦ collects the gradients, with respect to (x, p), of the position constraints Φ(x) = 0
and of the velocity constraints Φ̇ = G(x) M⁻¹ p = 0, and J = [[0, I], [-I, 0]]. ∇H comes from
autograd. The momentum is converted to a velocity before each contact impulse and back after
it (the authors' CHNNwC).

Everything is float64, but for an option: the potential's network may run in float32
(``network_dtype="float32"``, :data:`NETWORK_DTYPES`), its input rounded to float32 and its
value returned in float64, so that the constrained dynamics, the contact solve and the
parameters of inertia and contact stay float64. The models keep a
:class:`~physid.contact.model.SolverLog` in ``log``, which counts how the contact problems
were solved (fast solver, cvxpylayers fallbacks).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from physid.contact.integrate import _apply_contacts, rk4_step
from physid.contact.mechanics import Constraints, acceleration, inverse_mass_matrix
from physid.contact.model import VARIANTS, ContactModel, SolverLog
from physid.contact.system import ContactSystem
from physid.contact.tasks import Task
from physid.core.validate import check_choice, check_count, check_positive, check_seed, check_tensor

__all__ = [
    "NETWORK_DTYPES",
    "ContactCHNN",
    "ContactCLNN",
    "ContactParameters",
    "MassModel",
    "Potential",
    "hamiltonian_field",
    "restitution_reach",
    "smooth_step",
]

DTYPE = torch.float64

#: The precisions the potential's network may run in (:class:`Potential`), by name.
NETWORK_DTYPES = {"float64": torch.float64, "float32": torch.float32}


def _check_generator(generator: torch.Generator | None) -> torch.Generator | None:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    return generator


def _grad_leaf(t: Tensor) -> Tensor:
    """``t`` itself if it is part of a graph, else a detached leaf that requires a gradient."""
    return t if t.requires_grad else t.detach().requires_grad_(True)


def _numpy(t: Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().copy()


# ---------------------------------------------------------------------------------------------
# Inertia


class MassModel(nn.Module):
    """The learned inverse inertia M⁻¹ of the system's bodies.

    Each body b has a log-mass ``log_mass[b]`` (mass m_b = exp) and, for an extended body
    (``points_per_body > 1``: a disk, a 3-D rigid body), a log second moment *per unit mass*
    ``log_moment[b, k]`` along each body axis k (s_bk = exp). Its block of the inverse inertia
    is (:func:`~physid.contact.mechanics.inverse_mass_matrix`)

        M⁻¹_b = (1/m_b) (𝟙𝟙ᵀ + diag(0, 1/s_b1, …, 1/s_bp)),

    acting per spatial dimension. All raw parameters start at 0.1·N(0, 1), as in the authors'
    code.

    There is one parametrisation, and the same :meth:`inv_mass` enters the dynamics and the
    contact model. The authors' code treats the exponentiated moment as an *absolute* moment of
    inertia in the dynamics (``Minv_op``: block (1/m)𝟙𝟙ᵀ + diag(0, 1/I)) but as a moment *per
    unit mass* in the contact model (``Minv``: block (1/m)(𝟙𝟙ᵀ + diag(0, 1/I))); the two agree
    only at m = 1, which is why their learned BD5 mass ratios were not recovered (the ratios
    their published notebook prints for their Appendix I). Point-mass tasks (BP, CP, Rope)
    were not affected.

    The equality constraints (rigid frames, the gyroscope's pivot joint, pendulum links) are
    known and not learned; the gyroscope learns one mass and three moments.

    Args:
        system: the system whose bodies are modelled (``n_points / points_per_body`` bodies).
        generator: seeded generator of the initial values.
    """

    def __init__(self, system: ContactSystem, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if not isinstance(system, ContactSystem):
            raise TypeError(f"system must be a ContactSystem, got {type(system).__name__}")
        _check_generator(generator)
        p = check_count("points_per_body", system.points_per_body)
        if system.n_points % p:
            raise ValueError(
                f"points_per_body = {p} does not divide the {system.n_points} points of "
                f"{system.name}"
            )
        self.dim = system.dim
        self.points_per_body = p
        self.n_bodies = system.n_points // p
        device = system.device
        self.log_mass = nn.Parameter(
            0.1 * torch.randn(self.n_bodies, generator=generator, dtype=DTYPE).to(device)
        )
        self.log_moment = nn.Parameter(
            0.1 * torch.randn(self.n_bodies, p - 1, generator=generator, dtype=DTYPE).to(device)
        )

    def masses(self) -> Tensor:
        """``(n_bodies,)`` body masses exp(log_mass)."""
        return self.log_mass.exp()

    def moments(self) -> Tensor:
        """``(n_bodies, points_per_body - 1)`` per-unit-mass second moments exp(log_moment)."""
        return self.log_moment.exp()

    def inv_mass(self) -> Tensor:
        """``(N, N)`` the inverse inertia M⁻¹ (positive definite for every parameter value)."""
        moments = self.moments() if self.points_per_body > 1 else None
        return inverse_mass_matrix(self.masses(), moments, self.dim, self.points_per_body)

    @torch.no_grad()
    def set_values(self, masses, moments=None) -> None:
        """Set the raw parameters to the logs of ``masses`` ``(n_bodies,)`` and ``moments``
        ``(n_bodies, points_per_body - 1)`` (e.g. the truth, for tests)."""
        masses = torch.as_tensor(masses, dtype=DTYPE, device=self.log_mass.device)
        check_tensor("masses", masses, shape=(self.n_bodies,), positive=True)
        self.log_mass.copy_(masses.log())
        if self.points_per_body > 1:
            if moments is None:
                raise ValueError("moments are needed for bodies with more than one point")
            moments = torch.as_tensor(moments, dtype=DTYPE, device=self.log_mass.device)
            shape = (self.n_bodies, self.points_per_body - 1)
            check_tensor("moments", moments, shape=shape, positive=True)
            self.log_moment.copy_(moments.log())


# ---------------------------------------------------------------------------------------------
# Potential


class Potential(nn.Module):
    """The learned potential V(x): an MLP [N → hidden × layers → 1] with Softplus activations.

    As in the authors' code (which replaced the tanh of Finzi et al. by Softplus), the weights
    have an orthogonal initialisation; the biases start at zero. The weights come from
    ``generator`` alone: building a potential leaves torch's global random state as it was.
    They are drawn in float64 and, with ``dtype="float32"``, rounded to float32 (the same
    seed, the same start); the network then runs in float32 on its input rounded to float32,
    and V and its gradient come back in float64.

    Args:
        n_coords: N, the number of coordinates.
        hidden: width of the hidden layers.
        layers: number of hidden layers.
        generator: seeded generator of the initial weights.
        dtype: the network's precision, a key of :data:`NETWORK_DTYPES`.
    """

    def __init__(
        self,
        n_coords: int,
        hidden: int = 256,
        layers: int = 3,
        generator: torch.Generator | None = None,
        dtype: str = "float64",
    ) -> None:
        super().__init__()
        n_coords = check_count("n_coords", n_coords)
        hidden = check_count("hidden", hidden)
        layers = check_count("layers", layers)
        _check_generator(generator)
        self.network_dtype = check_choice("dtype", dtype, tuple(NETWORK_DTYPES))
        self.n_coords = n_coords
        sizes = [n_coords] + [hidden] * layers + [1]
        modules: list[nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            linear = nn.utils.skip_init(nn.Linear, a, b, dtype=DTYPE)  # no global RNG draw
            with torch.no_grad():
                nn.init.orthogonal_(linear.weight, generator=generator)
                linear.bias.zero_()
            modules.append(linear)
            if i < layers:
                modules.append(nn.Softplus())
        self.net = nn.Sequential(*modules).to(NETWORK_DTYPES[dtype])

    def forward(self, x: Tensor) -> Tensor:
        """V(x), ``(B,)`` for ``x`` of shape ``(B, N)``, in ``x``'s precision."""
        return self.net(x.to(NETWORK_DTYPES[self.network_dtype]))[..., 0].to(x.dtype)

    def force(self, x: Tensor) -> Tensor:
        """``-∇V(x)``, ``(B, N)``, by autograd.

        With gradients enabled the graph of the derivative is kept (``create_graph=True``), so
        a loss on the trajectory differentiates through the force (a second derivative of the
        network). Under ``torch.no_grad`` the force is computed and returned detached.
        """
        create = torch.is_grad_enabled()
        with torch.enable_grad():
            x = _grad_leaf(x)
            (grad,) = torch.autograd.grad(self(x).sum(), x, create_graph=create)
        return -grad


# ---------------------------------------------------------------------------------------------
# Smooth dynamics


def smooth_step(
    x: Tensor,
    v: Tensor,
    dt: float,
    inv_mass: Tensor,
    force: Callable[[Tensor], Tensor],
    constraints: Constraints | None,
) -> tuple[Tensor, Tensor]:
    """One RK4 step of the CLNN dynamics ``v̇ = M⁻¹(F - Gᵀλ)`` (the module docstring).

    Args:
        x: ``(B, N)`` positions.
        v: ``(B, N)`` velocities.
        dt: time step.
        inv_mass: ``(N, N)`` inverse inertia.
        force: callable ``x -> -∇V(x)``.
        constraints: the equality constraints, or None.
    """

    def accel(x: Tensor, v: Tensor) -> Tensor:
        return acceleration(x, v, inv_mass, force(x), constraints)

    return rk4_step(x, v, dt, accel)


def _distance_part(constraints: Constraints | None) -> Constraints | None:
    """The distance constraints alone (their Jacobian at v is ∂(G(x) v)/∂x), or None."""
    if constraints is None or not constraints.distances:
        return None
    return Constraints(
        dim=constraints.dim, n_points=constraints.n_points, distances=constraints.distances
    )


def hamiltonian_field(
    x: Tensor,
    p: Tensor,
    inv_mass: Tensor,
    potential: Callable[[Tensor], Tensor],
    constraints: Constraints | None,
) -> tuple[Tensor, Tensor]:
    """``(ẋ, ṗ)`` of the CHNN, ``ż = P(J∇H)`` with ``H = ½ pᵀM⁻¹p + V(x)`` (module docstring).

    The constraint gradients DΦ are those of Φ(x) (rows ``(G, 0)``) and of
    ``Φ̇ = G(x) M⁻¹ p`` (rows ``(∂(G v)/∂x, G M⁻¹)`` with ``v = M⁻¹ p``). For a distance
    constraint ``‖x_i - x_j‖² - l²``, ``∂(G v)/∂x = vᵀ∇²Φ`` is G evaluated at v; for a linear
    joint it is zero.

    Args:
        x: ``(B, N)`` positions.
        p: ``(B, N)`` momenta.
        inv_mass: ``(N, N)`` inverse inertia.
        potential: callable ``x -> V(x)`` of shape ``(B,)``.
        constraints: the equality constraints, or None.
    """
    create = torch.is_grad_enabled()
    # The partial derivatives: ∂H/∂x = ∇V(x) and ∂H/∂p = M⁻¹p (M⁻¹ symmetric). Differentiating H
    # with respect to x and p together by autograd would give total derivatives through the
    # graph: after a contact at x, p depends on x through the impulse, and that path would be
    # added to ∂H/∂x.
    with torch.enable_grad():
        x = _grad_leaf(x)
        (dx,) = torch.autograd.grad(potential(x).sum(), x, create_graph=create, allow_unused=True)
    dHdx = torch.zeros_like(x) if dx is None else dx
    dHdp = p @ inv_mass.T
    if not create:
        dHdx, dHdp = dHdx.detach(), dHdp.detach()
        x, p = x.detach(), p.detach()
    xdot, pdot = dHdp, -dHdx  # J∇H
    if constraints is None:
        return xdot, pdot
    B, N = x.shape
    G = constraints.jacobian(x)  # (B, E, N)
    E = G.shape[1]
    v = p @ inv_mass.T
    K = x.new_zeros(B, E, N)
    distances = _distance_part(constraints)
    if distances is not None:
        K = torch.cat([distances.jacobian(v), K[:, len(constraints.distances) :]], 1)
    # D = DΦᵀ, (B, 2E, 2N): rows are the gradients of Φ and Φ̇ with respect to (x, p).
    D = torch.cat([torch.cat([G, torch.zeros_like(G)], 2), torch.cat([K, G @ inv_mass], 2)], 1)

    def J(w: Tensor) -> Tensor:  # J (a, b) = (b, -a) on the last dimension
        return torch.cat([w[..., N:], -w[..., :N]], -1)

    JDt = J(D).transpose(1, 2)  # J Dᵀ: J applied to each row of D, (B, 2N, 2E)
    gram = D @ JDt  # DΦᵀ J DΦ, (B, 2E, 2E), antisymmetric and invertible
    w = torch.cat([xdot, pdot], -1)
    lam = torch.linalg.solve(gram, (D @ w[..., None]))
    w = w - (JDt @ lam)[..., 0]
    return w[:, :N], w[:, N:]


def _hamiltonian_step(
    x: Tensor,
    p: Tensor,
    dt: float,
    field: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]],
) -> tuple[Tensor, Tensor]:
    """One classical RK4 step of ``(ẋ, ṗ) = field(x, p)`` (the authors' code: Kutta's 3/8
    rule, see :func:`~physid.contact.integrate.rk4_step`)."""
    k1x, k1p = field(x, p)
    k2x, k2p = field(x + 0.5 * dt * k1x, p + 0.5 * dt * k1p)
    k3x, k3p = field(x + 0.5 * dt * k2x, p + 0.5 * dt * k2p)
    k4x, k4p = field(x + dt * k3x, p + dt * k3p)
    return (
        x + dt / 6 * (k1x + 2 * k2x + 2 * k3x + k4x),
        p + dt / 6 * (k1p + 2 * k2p + 2 * k3p + k4p),
    )


# ---------------------------------------------------------------------------------------------
# Contact parameters


def restitution_reach(steps: int, lr: float, lr_final: float | None = None,
                      planned: int | None = None) -> float:
    """How far ``steps`` AdamW steps can move a learned restitution: ``Σ_k η_k / 6`` over the
    steps' learning rates η_k (:func:`physid.contact.training.learning_rate`): ``steps · lr / 6``
    at a constant rate and ``steps · (lr + lr_final) / 12`` under the cosine decay to
    ``lr_final`` over those steps (its cosines sum to zero over the steps; one step takes
    ``lr``). ``planned`` is the schedule's length when training stopped before its end (the
    plateau rule, :class:`~physid.contact.training.TrainConfig`): the sum then runs over the
    first ``steps`` of ``planned`` steps (default: ``steps``).

    ``e = hardsigmoid(r) = r/6 + ½`` (on |r| < 3, :class:`ContactParameters`), and Adam's
    step on a coordinate is ``η · m̂ / (√v̂ + ε)``, about ``η`` while its gradient keeps its
    sign (the tests measure it on a training run), so e moves at most about ``η / 6`` per step.
    Where the truth lies further than this from e's start, no training of that length reaches
    it."""
    steps = check_count("steps", steps, minimum=0)
    lr = check_positive("lr", lr)
    planned = steps if planned is None else check_count("planned", planned, minimum=0)
    if planned < steps:
        raise ValueError(f"planned must be at least steps ({steps}), got {planned!r}")
    if lr_final is None or planned < 2:
        return steps * lr / 6.0
    lr_final = check_positive("lr_final", lr_final)
    if planned == steps:
        return steps * (lr + lr_final) / 12.0
    k = np.arange(steps)
    rates = lr_final + 0.5 * (lr - lr_final) * (1.0 + np.cos(np.pi * k / (planned - 1)))
    return float(rates.sum()) / 6.0


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


class ContactParameters(nn.Module):
    """Learned friction μ = ReLU(raw_mu) and restitution e = hardsigmoid(raw_cor).

    As in the authors' code, raw_mu starts U(0, 1) and raw_cor N(0, 1). hardsigmoid(r) =
    clamp(r/6 + ½, 0, 1) has a zero gradient outside (-3, 3), so e can saturate at exactly 0
    or 1; ReLU lets μ reach exactly 0. One value is shared by all candidate contacts on a
    homogeneous task, else there is one per candidate (P of them).

    Args:
        task: the task (its number of candidates and whether it is homogeneous).
        generator: seeded generator of the initial values.
        reg: ε of CMr (its initial value when learned).
        learn_reg: learn ε = softplus(raw_reg) (needs a contact model that accepts a tensor
            ``reg``).
    """

    def __init__(
        self,
        task: Task,
        generator: torch.Generator | None = None,
        reg: float = 0.01,
        learn_reg: bool = False,
    ) -> None:
        super().__init__()
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, got {type(task).__name__}")
        _check_generator(generator)
        reg = check_positive("reg", reg)
        if not isinstance(learn_reg, bool):
            raise TypeError(f"learn_reg must be True or False, got {learn_reg!r}")
        self.n_candidates = task.system.n_candidates
        self.homogeneous = task.homogeneous
        n = 1 if self.homogeneous else self.n_candidates
        device = task.system.device
        self.raw_mu = nn.Parameter(torch.rand(n, generator=generator, dtype=DTYPE).to(device))
        self.raw_cor = nn.Parameter(torch.randn(n, generator=generator, dtype=DTYPE).to(device))
        self.learn_reg = learn_reg
        self._reg = reg
        if learn_reg:
            raw_reg = torch.tensor(_inverse_softplus(reg), dtype=DTYPE, device=device)
            self.raw_reg = nn.Parameter(raw_reg)

    def _full(self, values: Tensor) -> Tensor:
        return values.expand(self.n_candidates) if self.homogeneous else values

    def mu(self) -> Tensor:
        """``(P,)`` friction coefficients, ≥ 0."""
        return self._full(torch.relu(self.raw_mu))

    def cor(self) -> Tensor:
        """``(P,)`` coefficients of restitution, in [0, 1]."""
        return self._full(nn.functional.hardsigmoid(self.raw_cor))

    def reg(self) -> Tensor | float:
        """ε of CMr: a scalar tensor if learned, else a float."""
        return nn.functional.softplus(self.raw_reg) if self.learn_reg else self._reg

    @torch.no_grad()
    def set_values(self, mu, cor) -> None:
        """Set the raw parameters so that μ and e equal ``mu`` and ``cor`` (``(P,)``; on a
        homogeneous task all entries must be equal)."""
        P = self.n_candidates
        mu = check_tensor("mu", torch.as_tensor(mu, dtype=DTYPE), shape=(P,), nonnegative=True)
        cor = check_tensor("cor", torch.as_tensor(cor, dtype=DTYPE), shape=(P,), nonnegative=True)
        if bool((cor > 1).any()):
            raise ValueError(f"cor must lie in [0, 1], found {float(cor.max()):g}")
        if self.homogeneous:
            if bool((mu != mu[0]).any() | (cor != cor[0]).any()):
                raise ValueError("a homogeneous task takes equal mu and cor for every candidate")
            mu, cor = mu[:1], cor[:1]
        self.raw_mu.copy_(mu)
        self.raw_cor.copy_(6 * (cor - 0.5))


# ---------------------------------------------------------------------------------------------
# The models


class _ContactNetwork(nn.Module):
    """What CLNN and CHNN share: inertia, potential, contact parameters, rollout scaffolding."""

    #: Trained on whole chunks (the baselines train on consecutive 1-step pairs).
    one_step: bool = False

    def __init__(
        self, task: Task, variant: str, seed: int, learn_reg: bool = False, reg: float = 0.01,
        network_dtype: str = "float64",
    ) -> None:
        super().__init__()
        if not isinstance(task, Task):
            raise TypeError(f"task must be a Task, got {type(task).__name__}")
        self.variant = check_choice("variant", variant, VARIANTS)
        self.seed = check_seed("seed", seed)
        if not isinstance(learn_reg, bool):
            raise TypeError(f"learn_reg must be True or False, got {learn_reg!r}")
        if learn_reg and variant != "CMr":
            raise ValueError(f"learn_reg needs variant 'CMr', got variant {variant!r}")
        self.task = task
        self.system = task.system
        generator = torch.Generator().manual_seed(self.seed)
        self.masses = MassModel(task.system, generator)
        self.potential = Potential(task.system.n_coords, generator=generator, dtype=network_dtype)
        self.contact = ContactParameters(task, generator, reg=reg, learn_reg=learn_reg)
        self.log = SolverLog()
        self.to(task.system.device)  # the potential's layers are made on the CPU

    def contact_model(self) -> ContactModel:
        """The contact model with the current ε."""
        return ContactModel(variant=self.variant, reg=self.contact.reg())

    def _check_rollout(self, x0: Tensor, v0: Tensor, n_steps: int) -> int:
        n_steps = check_count("n_steps", n_steps)
        N = self.system.n_coords
        check_tensor("x0", x0, shape=(None, N), dtype=DTYPE)
        check_tensor("v0", v0, shape=(x0.shape[0], N), dtype=DTYPE)
        return n_steps

    def _contacts(
        self, x: Tensor, v: Tensor, inv_mass: Tensor, mu: Tensor, cor: Tensor, model: ContactModel
    ) -> Tensor:
        """Velocities after the contact impulses; samples whose state is no longer finite (a
        diverging learned model) are left as they are, so a blow-up is seen by the caller.

        The states come from a rollout whose start was checked, μ, e and M⁻¹ from the model's
        own parametrisation (ReLU, hardsigmoid, and positive masses and moments in
        :func:`~physid.contact.mechanics.inverse_mass_matrix`): the step does not
        check them again (:func:`~physid.contact.integrate.apply_contacts` would, with a host
        synchronisation and an eigendecomposition per step)."""
        finite = torch.isfinite(x).all(1) & torch.isfinite(v).all(1)
        dt = float(self.task.dt)
        if bool(finite.all()):
            v_new, _ = _apply_contacts(self.system, model, x, v, mu, cor, dt, self.log,
                                       inv_mass, None)
            return v_new
        rows = finite.nonzero()[:, 0]
        if len(rows) == 0:
            return v
        v_rows, _ = _apply_contacts(self.system, model, x[rows], v[rows], mu, cor, dt,
                                    self.log, inv_mass, None)
        return v.index_put((rows,), v_rows)

    def learned_parameters(self) -> dict:
        """The physical parameters as plain numbers: μ and e per candidate, masses, mass
        ratios to body 0, per-unit-mass moments, and ε (NaN under CM, where it is unused)."""
        masses = _numpy(self.masses.masses())
        reg = self.contact.reg()
        return {
            "mu": _numpy(self.contact.mu()),
            "cor": _numpy(self.contact.cor()),
            "masses": masses,
            "mass_ratios": masses / masses[0],
            "moments": _numpy(self.masses.moments()),
            "reg": float(reg) if self.variant == "CMr" else math.nan,
        }


class ContactCLNN(_ContactNetwork):
    """CLNN with the contact model (CM-CD-CLNN, CMr-CD-CLNN of the paper).

    Per step: one RK4 step of ``v̇ = M⁻¹(F - Gᵀλ)`` with the learned M⁻¹ and F = -∇V
    (:func:`smooth_step`), then the contact impulses with the learned M⁻¹, μ and e.

    Args:
        task: the task (system, time step, candidates).
        variant: ``"CM"`` or ``"CMr"``.
        seed: seed of the initial parameters.
        learn_reg: learn ε of CMr.
        reg: ε of CMr (initial value when learned).
        network_dtype: the potential's precision (:class:`Potential`): ``"float64"`` or
            ``"float32"``; the contact solve stays float64.
    """

    def rollout(self, x0: Tensor, v0: Tensor, n_steps: int) -> tuple[Tensor, Tensor]:
        """``n_steps`` steps from ``(x0, v0)`` (each ``(B, N)``): positions and velocities
        ``(B, n_steps + 1, N)``, the first state included."""
        n_steps = self._check_rollout(x0, v0, n_steps)
        inv_mass = self.masses.inv_mass()
        mu, cor, model = self.contact.mu(), self.contact.cor(), self.contact_model()
        constraints = self.system.constraints
        xs, vs = [x0], [v0]
        x, v = x0, v0
        for _ in range(n_steps):
            x, v = smooth_step(x, v, self.task.dt, inv_mass, self.potential.force, constraints)
            v = self._contacts(x, v, inv_mass, mu, cor, model)
            xs.append(x)
            vs.append(v)
        return torch.stack(xs, 1), torch.stack(vs, 1)


class ContactCHNN(_ContactNetwork):
    """CHNN with the contact model (CM-CD-CHNN, CMr-CD-CHNN of the paper).

    The state is (x, p) with p = M v. Per step: one RK4 step of ``ż = P(J∇H)``
    (:func:`hamiltonian_field`), then v = M⁻¹p, the contact impulses, and p = M v.

    Args:
        task: the task (system, time step, candidates).
        variant: ``"CM"`` or ``"CMr"``.
        seed: seed of the initial parameters.
        learn_reg: learn ε of CMr.
        reg: ε of CMr (initial value when learned).
        network_dtype: the potential's precision (:class:`Potential`): ``"float64"`` or
            ``"float32"``; the contact solve stays float64.
    """

    def rollout(self, x0: Tensor, v0: Tensor, n_steps: int) -> tuple[Tensor, Tensor]:
        """``n_steps`` steps from ``(x0, v0)`` (each ``(B, N)``): positions and velocities
        ``(B, n_steps + 1, N)``, the first state included."""
        n_steps = self._check_rollout(x0, v0, n_steps)
        inv_mass = self.masses.inv_mass()
        mu, cor, model = self.contact.mu(), self.contact.cor(), self.contact_model()
        constraints = self.system.constraints

        def field(x: Tensor, p: Tensor) -> tuple[Tensor, Tensor]:
            return hamiltonian_field(x, p, inv_mass, self.potential, constraints)

        def momentum(v: Tensor) -> Tensor:
            return torch.linalg.solve(inv_mass, v.T).T

        xs, vs = [x0], [v0]
        x, p = x0, momentum(v0)
        for _ in range(n_steps):
            x, p = _hamiltonian_step(x, p, self.task.dt, field)
            v = self._contacts(x, p @ inv_mass.T, inv_mass, mu, cor, model)
            p = momentum(v)
            xs.append(x)
            vs.append(v)
        return torch.stack(xs, 1), torch.stack(vs, 1)
