"""The five systems, their inertia, constraints, detection, and Algorithm 1's integration."""

import numpy as np
import pytest
import torch

from physid.contact.gyroscope import Gyroscope, euler_zxz
from physid.contact.integrate import apply_contacts, rk4_step, simulate
from physid.contact.mechanics import Constraints, acceleration, body_inverse_mass
from physid.contact.model import ContactModel, SolverLog
from physid.contact.pendulum import ChainPendulum
from physid.contact.planar import BouncingBodies
from physid.contact.rope import Rope
from physid.contact.tasks import (
    ROPE_NODES,
    ROPE_SCALING_NODES,
    TASK_NAMES,
    make_task,
    rope_task,
)

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


# ---------------------------------------------------------------------------------------------
# The rope tasks: the paper's 200 nodes, and the scalability sizes.


def test_the_paper_rope_task_has_200_nodes_and_says_so():
    task = make_task("Rope")
    assert ROPE_NODES == 200 and task.system.n_points == 200
    assert task.system.n_candidates == 2 * 200 - 1 == task.mu.shape[0]
    assert task.name == "Rope" and "200-node" in task.description
    assert task.system.stiffness == 50.0 and task.dt == 0.005 and task.n_steps == 20


@pytest.mark.parametrize("nodes", ROPE_SCALING_NODES)
def test_scaling_ropes_are_named_by_their_size_and_rebuilt_from_the_name(nodes):
    task = make_task("Rope", rope_nodes=nodes)
    assert task.system.n_points == nodes and f"{nodes}-node" in task.description
    again = make_task(task.name)
    assert again.name == task.name and again.system.n_points == nodes
    assert rope_task(nodes).name == task.name


def test_scaling_study_sizes_are_the_papers():
    assert ROPE_SCALING_NODES == (50, 100, 200)
    assert make_task("Rope", rope_nodes=50).name == "Rope50"


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: make_task("Rope", rope_nodes=1), ValueError, "n_nodes"),
        (lambda: make_task("Rope", rope_nodes=50.0), TypeError, "n_nodes"),
        (lambda: make_task("CP3", rope_nodes=50), ValueError, "rope_nodes"),
        (lambda: make_task("Rope50", rope_nodes=50), ValueError, "rope_nodes"),
        (lambda: make_task("Rope1"), ValueError, "n_nodes"),
        (lambda: rope_task(True), TypeError, "n_nodes"),
    ],
)
def test_rope_sizes_are_validated(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------------------------------------
# Initial conditions as in the authors' code.


def _link_angles_and_rates(x: torch.Tensor, v: torch.Tensor, n: int, lengths=None):
    """Absolute link angles from the downward vertical and their absolute rates."""
    nodes = x.reshape(-1, n, 2).numpy()
    vel = v.reshape(-1, n, 2).numpy()
    links = np.diff(nodes, axis=1, prepend=np.zeros_like(nodes[:, :1]))
    dv = np.diff(vel, axis=1, prepend=np.zeros_like(vel[:, :1]))
    q = np.arctan2(links[..., 0], -links[..., 1])
    rates = (links[..., 0] * dv[..., 1] - links[..., 1] * dv[..., 0]) / (links**2).sum(-1)
    return q, rates


def test_rope_and_pendulum_angles_are_measured_from_the_downward_vertical():
    rope = Rope(n_nodes=4)
    x, v = rope.from_angles(np.zeros((1, 4)), np.array([[2.0, 0.0, 0.0, 0.0]]))
    expected = np.stack([np.zeros(4), -0.05 * np.arange(1, 5)], -1)
    np.testing.assert_allclose(x[0], expected, atol=1e-15)
    # The first link's rate moves every node with it (absolute, not relative, rates).
    np.testing.assert_allclose(v[0], np.tile([[0.1, 0.0]], (4, 1)), atol=1e-15)
    pendulum = make_task("CP3").system
    x, _ = pendulum.from_angles(np.zeros((1, 3)), np.zeros((1, 3)))
    np.testing.assert_allclose(x[0, :, 1], -np.cumsum(pendulum.lengths), atol=1e-15)


def test_rope_initial_conditions_follow_the_authors_distribution():
    n = 40
    rope = Rope(n_nodes=n)
    x, v = rope.sample_state(400, np.random.default_rng(3))
    q, rates = _link_angles_and_rates(x, v, n)
    rel = np.remainder(np.diff(q, axis=1) + np.pi, 2 * np.pi) - np.pi
    assert (q[:, 0] >= 0).all() and (q[:, 0] <= 3.14).all()
    assert q[:, 0].mean() == pytest.approx(1.57, abs=0.15)
    assert (np.abs(rel) < rope.bend).all()
    # Every link's own rate is N(0, 1): summed rates would give sqrt(40) ≈ 6.3 at the tip.
    assert rates[:, 0].std() == pytest.approx(1.0, abs=0.15)
    assert rates[:, -1].std() == pytest.approx(1.0, abs=0.15)
    assert abs(np.corrcoef(rates[:, 0], rates[:, -1])[0, 1]) < 0.2


def test_pendulum_initial_conditions_follow_the_authors_distribution():
    system = make_task("CP3").system
    x, v = system.sample_state(400, np.random.default_rng(4))
    q, rates = _link_angles_and_rates(x, v, 3)
    assert (q >= 0).all() and (q <= 3.14).all()
    assert rates[:, -1].std() == pytest.approx(1.0, abs=0.15)
    assert abs(np.corrcoef(rates[:, 0], rates[:, -1])[0, 1]) < 0.2


def test_euler_angles_are_intrinsic_zxz_as_scipys():
    from scipy.spatial.transform import Rotation

    angles = np.random.default_rng(5).uniform(-1.5, 1.5, size=(6, 3))
    expected = Rotation.from_euler("ZXZ", angles).as_matrix()
    np.testing.assert_allclose(euler_zxz(*angles.T), expected, atol=1e-14)


def test_gyroscope_velocities_are_the_time_derivative_of_the_euler_path():
    gyro = Gyroscope()
    rng = np.random.default_rng(6)
    angles, rates = rng.uniform(-1.5, 1.5, size=(5, 3)), rng.normal(size=(5, 3))
    _, v = gyro.from_euler(angles, rates)
    h = 1e-6
    ahead, _ = gyro.from_euler(angles + h * rates, rates)
    behind, _ = gyro.from_euler(angles - h * rates, rates)
    np.testing.assert_allclose(v, (ahead - behind) / (2 * h), atol=1e-8)


def test_gyroscope_points_and_initial_conditions_follow_the_authors():
    gyro = Gyroscope()
    assert gyro.points_per_body == 4 and gyro.n_points == 4
    x, v = gyro.sample_state(400, np.random.default_rng(7))
    points, vel = x.reshape(-1, 4, 3).numpy(), v.reshape(-1, 4, 3).numpy()
    axes = points[:, 1:] - points[:, :1]  # rows: body x, y, z axes
    np.testing.assert_allclose(points[:, 0], 0.5 * axes[:, 2], atol=1e-12)  # COM on the z-axis
    tilt = np.arccos(axes[:, 2, 2])
    assert tilt.max() <= 1.5 + 1e-12 and tilt.max() > 1.2
    # ω from the axis velocities: v_k - v_0 = ω × e_k, so ω = ½ Σ_k e_k × (v_k - v_0).
    omega = 0.5 * np.cross(axes, vel[:, 1:] - vel[:, :1]).sum(1)
    z = np.array([0.0, 0.0, 1.0])
    node = np.cross(z, axes[:, 2])
    node /= np.linalg.norm(node, axis=-1, keepdims=True)
    # ω = φ̇ e_z + θ̇ n + ψ̇ e_3; n ⟂ e_z, e_3, so θ̇ = ω·n up to the sign of θ.
    nutation = (omega * node).sum(-1)
    basis = np.stack([np.broadcast_to(z, axes[:, 2].shape), axes[:, 2]], -1)
    assert np.abs(nutation).max() <= 0.3 + 1e-9 and np.abs(nutation).max() > 0.25
    phis, spins = [], []
    for b in range(len(omega)):
        sol = np.linalg.lstsq(basis[b], omega[b] - nutation[b] * node[b], rcond=None)[0]
        phis.append(sol[0])
        spins.append(sol[1])
    phis, spins = np.abs(phis), np.abs(spins)
    assert phis.max() <= 4.5 + 1e-9 and phis.max() > 4.0
    assert spins.min() > 1.5 * 2 and np.median(spins) == pytest.approx(10.5, abs=1.0)


# ---------------------------------------------------------------------------------------------
# Elastic frictionless impacts keep the energy; the drift of CP3-e is the smooth flow's.


def test_elastic_pendulum_impacts_keep_the_energy_on_the_constraint_manifold():
    task = make_task("CP3-e")
    system = task.system
    # The last bob 8 mm into the ground, moving down at 1.2 m/s, on the constraint manifold.
    x, v = system.from_angles(np.full((1, 3), 0.6), np.full((1, 3), -2.0))
    x0, v0 = torch.as_tensor(x.reshape(1, -1)), torch.as_tensor(v.reshape(1, -1))
    assert (system.detect(x0).distance < 0).any()
    for compensation in (0.125, 0.0):
        model = ContactModel(compensation=compensation)
        after, count = apply_contacts(
            system, model, x0, v0, task.mu, task.cor, task.dt, SolverLog()
        )
        assert int(count) == 1
        kinetic = system.energy(x0, v0) - system.potential(x0)
        change = system.energy(x0, after) - system.energy(x0, v0)
        # Exact up to CM's least-norm Tikhonov term (δ = 1e-6 of max |A|).
        assert float(change.abs() / kinetic) < 1e-5
        # The bob leaves the ground as fast as it came.
        J = system.detect(x0).jacobian[0, 2, 0]
        assert float(J @ after[0]) == pytest.approx(-float(J @ v0[0]), rel=1e-5)
