"""The five systems, their inertia, constraints, detection, and Algorithm 1's integration."""

import numpy as np
import pytest
import torch

from physid.contact.gyroscope import Gyroscope
from physid.contact.integrate import rk4_step, simulate
from physid.contact.mechanics import Constraints, acceleration, body_inverse_mass
from physid.contact.model import ContactModel
from physid.contact.pendulum import ChainPendulum
from physid.contact.planar import BouncingBodies
from physid.contact.rope import Rope
from physid.contact.tasks import TASK_NAMES, make_task

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")

SYSTEMS = {
    "BP": lambda: BouncingBodies([0.05, 0.1, 0.3, 0.4, 0.5], [0.05, 0.1, 0.13, 0.15, 0.18]),
    "BD": lambda: BouncingBodies([0.05, 0.1, 0.3], [0.05, 0.1, 0.13], disks=True),
    "CP": lambda: ChainPendulum([0.1, 0.2, 0.15], [0.35, 0.4, 0.35], [0.05, 0.15, 0.1]),
    "Gyro": Gyroscope,
    "Rope": lambda: Rope(n_nodes=6),
}


@pytest.fixture(scope="module", params=list(SYSTEMS))
def system_state(request):
    system = SYSTEMS[request.param]()
    x, v = system.sample_state(6, np.random.default_rng(0))
    return system, x, v


def test_initial_states_are_collision_free_and_respect_the_constraints(system_state):
    system, x, v = system_state
    assert x.shape == v.shape == (6, system.n_coords)
    assert (system.detect(x).distance >= 0).all()
    if system.constraints is not None:
        assert system.constraints.residual(x).abs().max() < 1e-12
        assert (system.constraints.jacobian(x) @ v[..., None]).abs().max() < 1e-12


def test_normal_rows_give_the_rate_of_the_signed_distance(system_state):
    system, x, v = system_state
    xr = x.clone().requires_grad_(True)
    detection = system.detect(xr)
    for p in range(system.n_candidates):
        (grad,) = torch.autograd.grad(detection.distance[:, p].sum(), xr, retain_graph=True)
        normal = detection.jacobian[:, p, 0]
        torch.testing.assert_close((normal * v).sum(-1), (grad * v).sum(-1), atol=1e-10, rtol=0)


def test_force_is_minus_the_gradient_of_the_potential(system_state):
    system, x, _ = system_state
    xr = x.clone().requires_grad_(True)
    potential = system.potential(xr).sum()
    grad = torch.autograd.grad(potential, xr)[0] if potential.requires_grad else torch.zeros_like(x)
    torch.testing.assert_close(system.force(x), -grad)


def test_body_inverse_mass_inverts_the_kinetic_energy_of_a_disk():
    m, r = torch.tensor(0.3), 0.2
    minv = body_inverse_mass(m, torch.tensor([r**2 / 4, r**2 / 4]))
    M = torch.kron(torch.linalg.inv(minv).contiguous(), torch.eye(2))
    # Centre velocity (0.5, -0.2), spin ω = 3 with unit axes along x and y.
    omega, vc = 3.0, torch.tensor([0.5, -0.2])
    v = torch.cat(
        [vc, vc + omega * torch.tensor([0.0, 1.0]), vc + omega * torch.tensor([-1.0, 0.0])]
    )
    kinetic = 0.5 * v @ M @ v
    expected = 0.5 * m * vc @ vc + 0.5 * (m * r**2 / 2) * omega**2
    assert float(kinetic) == pytest.approx(float(expected), rel=1e-12)


def test_constrained_dynamics_keep_a_pendulum_on_its_circle():
    c = Constraints(dim=2, n_points=1, distances=[(0, -1, 1.0)])
    x = torch.tensor([[1.0, 0.0]])
    v = torch.tensor([[0.0, -0.5]])
    gravity = lambda x: torch.tensor([[0.0, -9.81]])  # noqa: E731
    accel = lambda x, v: acceleration(x, v, torch.eye(2), gravity(x), c)  # noqa: E731
    for _ in range(100):
        x, v = rk4_step(x, v, 1e-3, accel)
    assert float(x.norm()) == pytest.approx(1.0, abs=1e-8)
    # Energy: ½ v² + g y is conserved by the smooth flow.
    assert float(0.5 * (v**2).sum() + 9.81 * x[0, 1]) == pytest.approx(0.125, abs=1e-8)


def test_elastic_frictionless_collisions_conserve_energy():
    task = make_task("BP5-e")
    x0, v0 = task.system.sample_state(4, np.random.default_rng(1))
    model = ContactModel(compensation=0.0)
    with torch.no_grad():
        r = simulate(task.system, x0, v0, 40, task.dt, model, task.mu, task.cor)
    assert r.contact.any()
    energy = task.system.energy(r.x.flatten(0, 1), r.v.flatten(0, 1)).reshape(4, -1)
    torch.testing.assert_close(energy, energy[:, :1].expand_as(energy), atol=1e-10, rtol=0)
    assert r.log.fallbacks == 0 and r.log.fast_exact > 0


def test_inelastic_contact_removes_the_approach_velocity():
    task = make_task("CP3")
    system = task.system
    x, v = system.from_angles(np.array([[1.2, 1.4, 1.5]]), np.zeros((1, 3)))
    x0, v0 = torch.as_tensor(x.reshape(1, -1)), torch.as_tensor(v.reshape(1, -1))
    with torch.no_grad():
        r = simulate(system, x0, v0, 80, task.dt, ContactModel(), task.mu, task.cor)
    step = int(r.contact[0].float().argmax())
    assert r.contact[0, step]
    # The bob touches the ground approaching it, and leaves the impact without approaching.
    assert r.v[0, step, 5] < 0 <= r.v[0, step + 1, 5] + 1e-12


def test_tasks_have_one_coefficient_per_candidate():
    for name in TASK_NAMES:
        task = make_task(name)
        assert task.mu.shape == task.cor.shape == (task.system.n_candidates,)
        assert ((task.cor >= 0) & (task.cor <= 1)).all() and (task.mu >= 0).all()
    bp5 = make_task("BP5")
    assert bp5.cor[:10].tolist() == pytest.approx([0.1 * i for i in range(1, 11)])
    assert not bp5.homogeneous and make_task("CP3").homogeneous
