"""The paper's three learned baselines without a contact model (Zhong, Dey & Chakraborty 2021).

The authors compare CM-CD-CLNN (a CLNN with the differentiable contact model,
:mod:`~physid.contact.learned`) with three models that learn the contacts instead of modelling
them (``baselines/`` of their repository, Fig. 3 and Table 3 of the paper):

* **MLP-CD-CLNN** (:class:`MLPCDCLNN`): a CLNN (learned masses and potential, one RK4 step of
  the constrained dynamics per time step) whose velocity jump at a contact is an MLP
  ``[x, v] ∈ R^{2N} → 256 → 256 → 256 → Δv ∈ R^N`` (ReLU). "CD": it is applied only where the
  *true* collision detector fires (``task.system.detect(x).distance < 0`` for some candidate,
  at the positions after the smooth step), as the contact model would be.
* **IN-CP-CLNN** (:class:`INCPCLNN`): the same CLNN plus an Interaction Network (Battaglia et
  al. 2016) that predicts a velocity jump Δv at *every* step, without detection ("CP": contact
  prediction). The authors' sizes: relational MLP hidden 300, object MLP hidden 200.
* **IN-CP-SP** (:class:`INCPSP`): the "original IN", with no physics prior: the Interaction
  Network predicts the next velocity (as ``v_{t+1} = v_t + IN(x_t, v_t)``) and the positions
  move with the current velocity, ``x_{t+1} = x_t + v_t·dt``. It is given the true masses and
  gravity as object and global features.

All three train on one-step pairs in the authors' code (``one_step = True``); CM models train on
the 5-state chunks. They are registered under the paper's names in
:data:`physid.contact.models.MODELS`.

Beside them, :class:`NoContact` is the trivial reference a learned contact must beat: the true
masses and forces with no contact at all (nothing learned, not one of the paper's models). A
baseline whose error equals its error has learned nothing of contact.

**Objects and relations of the Interaction Network.** The N coordinates are grouped by body:
``points_per_body`` points (1 for a point mass, 3 for a disk, 4 for the gyroscope) of ``dim``
coordinates each, stored body after body. An object's state is its points' absolute positions
and velocities; its static attributes are its radius (``system.radii`` where the system has one
per body, else 0), and, for IN-CP-SP only, its true mass (read off the inverse mass matrix at
the body's first point: ``1/M⁻¹_{ii}`` is the body's mass for point masses and rigid bodies
alike). The relations are all ordered pairs of bodies, except for the rope, whose relations are
its chain neighbours (i, i ± 1). A relation sees both objects and the displacement, relative
velocity and distance between their first points (the centres). The environment — the walls of
the box, the ground, the pivot or the rope's anchor — is fixed in the world frame, so it enters
through the absolute coordinates in the object features: no wall objects are added, which keeps
one design for all five systems. The gyroscope has a single body, hence no relation: its IN is
the object MLP alone. IN-CP-SP's global feature is the task's gravity (0 for the box).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch
from torch import Tensor, nn

from physid.contact.learned import MassModel, Potential, smooth_step
from physid.contact.model import SolverLog
from physid.contact.system import ContactSystem
from physid.contact.tasks import Task
from physid.core.validate import check_count, check_seed, check_tensor

__all__ = [
    "INCPCLNN",
    "INCPSP",
    "InteractionNetwork",
    "MLPCDCLNN",
    "NoContact",
    "baseline_factory",
    "mlp",
]

#: Sizes of the authors' baselines: MLP hidden width and depth, IN relational and object widths.
MLP_HIDDEN, MLP_LAYERS = 256, 3
RELATION_HIDDEN, OBJECT_HIDDEN, EFFECT_DIM = 300, 200, 50


def mlp(sizes: list[int], generator: torch.Generator) -> nn.Sequential:
    """A float64 ReLU MLP with the given layer sizes, initialised from ``generator``.

    Weights and biases are drawn U(-1/√fan_in, 1/√fan_in), PyTorch's default range for
    ``nn.Linear``, but from the seeded generator so that a model is a function of its seed
    (and building it leaves torch's global random state as it was).
    """
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        linear = nn.utils.skip_init(nn.Linear, n_in, n_out, dtype=torch.float64)
        bound = 1 / math.sqrt(n_in)
        with torch.no_grad():
            linear.weight.uniform_(-bound, bound, generator=generator)
            linear.bias.uniform_(-bound, bound, generator=generator)
        layers.append(linear)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _check_task(task: Task) -> Task:
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task, got {type(task).__name__}")
    return task


def _bodies(system: ContactSystem) -> tuple[int, int]:
    """``(n_bodies, coordinates per body)``, grouping the points body after body."""
    per_body = system.points_per_body
    if per_body < 1 or system.n_points % per_body:
        raise ValueError(
            f"{system.name}: points_per_body {per_body} does not divide n_points {system.n_points}"
        )
    return system.n_points // per_body, per_body * system.dim


def _relations(system: ContactSystem) -> tuple[Tensor, Tensor]:
    """Sender and receiver indices of the system's interacting pairs
    (:meth:`~physid.contact.system.ContactSystem.interacting_pairs`)."""
    pairs = system.interacting_pairs()
    senders = torch.tensor([p[0] for p in pairs], dtype=torch.long, device=system.device)
    receivers = torch.tensor([p[1] for p in pairs], dtype=torch.long, device=system.device)
    return senders, receivers


def _radii(system: ContactSystem, n_bodies: int) -> Tensor:
    """``(n_bodies,)`` body radii where the system has one per body, else zeros."""
    radii = system.radii
    if radii is not None and radii.shape == (n_bodies,):
        return radii.to(torch.float64)
    return torch.zeros(n_bodies, dtype=torch.float64, device=system.device)


def true_masses(system: ContactSystem) -> Tensor:
    """``(n_bodies,)`` true body masses, ``1/M⁻¹_{ii}`` at each body's first coordinate."""
    n_bodies, per_body = _bodies(system)
    first = torch.arange(n_bodies, device=system.device) * per_body
    return 1 / system.inv_mass.diagonal()[first]


class InteractionNetwork(nn.Module):
    """An Interaction Network (Battaglia et al. 2016) over the bodies of a system.

    Each relation (sender s, receiver r) computes an effect
    ``e = f_R([o_s, o_r, c_r - c_s, ċ_r - ċ_s, ‖c_r - c_s‖])`` (c: the body's first point);
    each object sums its incoming effects and predicts its output
    ``f_O([o, a, Σ e, g])`` with o the object's positions and velocities, a its static
    attributes and g the global features. f_R: 3 hidden ReLU layers of 300, effects of size 50;
    f_O: 2 hidden ReLU layers of 200 (the authors' widths; Battaglia et al. used 150 and 100).

    Args:
        system: the system whose bodies are the objects (see the module docstring).
        attributes: ``(n_bodies, a)`` static object attributes.
        global_features: ``(g,)`` global features, appended to every object's input.
        generator: the seeded generator of the initial parameters.

    The output is ``(B, N)``: per body, one value per coordinate of its points.
    """

    def __init__(
        self,
        system: ContactSystem,
        attributes: Tensor,
        global_features: Tensor,
        generator: torch.Generator,
    ) -> None:
        super().__init__()
        self.n_bodies, self.per_body = _bodies(system)
        self.dim = system.dim
        senders, receivers = _relations(system)
        self.register_buffer("senders", senders)
        self.register_buffer("receivers", receivers)
        self.register_buffer("attributes", attributes.to(torch.float64))
        self.register_buffer("global_features", global_features.to(torch.float64))
        state = 2 * self.per_body
        relation_in = 2 * state + 2 * self.dim + 1
        object_in = state + attributes.shape[1] + EFFECT_DIM + global_features.shape[0]
        self.relational = mlp([relation_in] + [RELATION_HIDDEN] * 3 + [EFFECT_DIM], generator)
        self.object = mlp([object_in] + [OBJECT_HIDDEN] * 2 + [self.per_body], generator)

    def forward(self, x: Tensor, v: Tensor) -> Tensor:
        """The per-coordinate output ``(B, N)`` for positions and velocities ``(B, N)``."""
        B = x.shape[0]
        xb = x.reshape(B, self.n_bodies, self.per_body)
        vb = v.reshape(B, self.n_bodies, self.per_body)
        objects = torch.cat([xb, vb], -1)  # (B, n_b, 2·per_body)
        effects = x.new_zeros(B, self.n_bodies, EFFECT_DIM)
        if len(self.senders):
            s, r = self.senders, self.receivers
            dx = xb[:, r, : self.dim] - xb[:, s, : self.dim]
            dv = vb[:, r, : self.dim] - vb[:, s, : self.dim]
            inputs = torch.cat(
                [objects[:, s], objects[:, r], dx, dv, dx.norm(dim=-1, keepdim=True)], -1
            )
            effects = effects.index_add(1, r, self.relational(inputs))
        extra = torch.cat([self.attributes, self.global_features.expand(self.n_bodies, -1)], -1)
        inputs = torch.cat([objects, extra.expand(B, -1, -1), effects], -1)
        return self.object(inputs).reshape(B, -1)


class _Baseline(nn.Module):
    """Shared validation and rollout: subclasses implement :meth:`step`."""

    #: The authors' baselines train on one-step pairs.
    one_step = True

    def __init__(self, task: Task) -> None:
        super().__init__()
        self.task = _check_task(task)
        #: No contact problem is solved: the counts stay zero.
        self.log = SolverLog()

    def step(self, x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """One time step, ``(B, N)`` each."""
        raise NotImplementedError

    def rollout(self, x0: Tensor, v0: Tensor, n_steps: int) -> tuple[Tensor, Tensor]:
        """``n_steps`` steps from ``(x0, v0)`` (each ``(B, N)``): positions and velocities
        ``(B, n_steps + 1, N)``, the initial state first."""
        n_steps = check_count("n_steps", n_steps)
        N = self.task.system.n_coords
        check_tensor("x0", x0, shape=(None, N), dtype=torch.float64)
        check_tensor("v0", v0, shape=(x0.shape[0], N), dtype=torch.float64)
        xs, vs = [x0], [v0]
        x, v = x0, v0
        for _ in range(n_steps):
            x, v = self.step(x, v)
            xs.append(x)
            vs.append(v)
        return torch.stack(xs, 1), torch.stack(vs, 1)

    def learned_parameters(self) -> dict:
        """Learned physical parameters (none for a model without a mass model)."""
        return {}


class NoContact(_Baseline):
    """The true dynamics without contact: one RK4 step of the task's constrained dynamics with
    its own inverse inertia and force per time step, and no impulse ever (bodies pass through
    walls and each other). Nothing is learned; it is the reference the learned models'
    errors are compared with."""

    def step(self, x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """One smooth step of the true dynamics."""
        system = self.task.system
        return smooth_step(x, v, self.task.dt, system.inv_mass, system.force, system.constraints)


class _CLNN(_Baseline):
    """A CLNN: learned masses (:class:`~physid.contact.learned.MassModel`) and potential,
    one RK4 step of the constrained dynamics per time step."""

    def __init__(self, task: Task, generator: torch.Generator) -> None:
        super().__init__(task)
        system = task.system
        self.mass = MassModel(system, generator)
        self.potential = Potential(
            system.n_coords, hidden=MLP_HIDDEN, layers=MLP_LAYERS, generator=generator
        )

    def smooth(self, x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """The CLNN's RK4 step, without contact."""
        system = self.task.system
        return smooth_step(
            x, v, self.task.dt, self.mass.inv_mass(), self.potential.force, system.constraints
        )

    def learned_parameters(self) -> dict:
        """The learned body masses, their ratios to body 0's and the per-unit-mass moments
        (``(n_bodies, points_per_body - 1)``, empty for point masses), as numpy arrays."""
        with torch.no_grad():
            masses = self.mass.masses().cpu().numpy().astype(np.float64)
            moments = self.mass.moments().cpu().numpy().astype(np.float64)
        return {"masses": masses, "mass_ratios": masses / masses[0], "moments": moments}


class MLPCDCLNN(_CLNN):
    """MLP-CD-CLNN: a CLNN plus an MLP velocity jump where the true detector fires.

    After the CLNN's smooth step to ``(x', v')``, samples with a penetrating candidate contact
    (``task.system.detect(x').distance < 0``) get ``v' + MLP([x', v'])``; the others keep
    ``v'``. The MLP is ``2N → 256 → 256 → 256 → N`` with ReLU, as in the authors' code.
    """

    def __init__(self, task: Task, generator: torch.Generator) -> None:
        super().__init__(task, generator)
        N = task.system.n_coords
        self.jump = mlp([2 * N] + [MLP_HIDDEN] * MLP_LAYERS + [N], generator)

    def in_contact(self, x: Tensor) -> Tensor:
        """``(B,)`` whether the true detector fires at positions ``x``."""
        with torch.no_grad():
            return (self.task.system.detect(x.detach()).distance < 0).any(1)

    def step(self, x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        x, v = self.smooth(x, v)
        fires = self.in_contact(x)
        if bool(fires.any()):
            dv = self.jump(torch.cat([x[fires], v[fires]], -1))
            v = v.index_put((fires.nonzero()[:, 0],), dv, accumulate=True)
        return x, v


class INCPCLNN(_CLNN):
    """IN-CP-CLNN: a CLNN plus an Interaction Network velocity jump at every step.

    After the CLNN's smooth step to ``(x', v')``, every sample gets ``v' + IN(x', v')``; there
    is no collision detection. The IN's objects carry their radii (module docstring), not the
    masses, which only the CLNN learns.
    """

    def __init__(self, task: Task, generator: torch.Generator) -> None:
        super().__init__(task, generator)
        system = task.system
        n_bodies, _ = _bodies(system)
        attributes = _radii(system, n_bodies)[:, None]
        empty = torch.zeros(0, dtype=torch.float64, device=system.device)
        self.interaction = InteractionNetwork(system, attributes, empty, generator)

    def step(self, x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        x, v = self.smooth(x, v)
        return x, v + self.interaction(x, v)


class INCPSP(_Baseline):
    """IN-CP-SP: the original Interaction Network, without a physics prior.

    ``v_{t+1} = v_t + IN(x_t, v_t)`` and ``x_{t+1} = x_t + v_t·dt``. The objects carry their
    radii and true masses, the global feature is the task's gravity (0 without one).
    """

    def __init__(self, task: Task, generator: torch.Generator) -> None:
        super().__init__(task)
        system = task.system
        n_bodies, _ = _bodies(system)
        attributes = torch.stack([_radii(system, n_bodies), true_masses(system)], -1)
        gravity = torch.tensor([float(system.gravity)], dtype=torch.float64, device=system.device)
        self.interaction = InteractionNetwork(system, attributes, gravity, generator)

    def step(self, x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        return x + v * self.task.dt, v + self.interaction(x, v)


def baseline_factory(cls: type[nn.Module]) -> Callable[[Task, int], nn.Module]:
    """``make(task, seed)``: the baseline ``cls`` for ``task``, initialised from ``seed``."""

    def make(task: Task, seed: int) -> nn.Module:
        task = _check_task(task)
        generator = torch.Generator().manual_seed(check_seed("seed", seed))
        return cls(task, generator).to(task.system.device)

    make.__name__ = f"make_{cls.__name__}"
    make.__doc__ = f"A :class:`{cls.__name__}` for ``task``, initialised from ``seed``."
    return make
