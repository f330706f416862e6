"""Both formulations: analytic cases, agreement with each other and with cvxpy, gradients."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
import torch

from physid.pushing import Push, from_mask, random_pushes, rectangle, rigid_engine, simulate
from physid.pushing.finger import (
    COUPLED,
    FINGER,
    FINGER_RADIUS,
    FREE,
    LOCK,
    SLIDE,
    Finger,
    contact_events,
)
from physid.pushing.planar import friction_directions, perp
from physid.pushing.rigid_engine import line_solve, rigid_lcp_step

F64 = torch.float64
G = 9.81


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def ell():
    """An L of five cells with unequal masses and frictions."""
    return from_mask([[1, 1, 1], [1, 1, 0]], 0.02, [0.01, 0.02, 0.01, 0.03, 0.015],
                     [0.3, 0.5, 0.4, 0.2, 0.6], name="ell")


def yaw(positions: torch.Tensor, centres: torch.Tensor) -> torch.Tensor:
    """Rotation of the segment from cell 0 to the last cell."""
    d, d0 = positions[..., -1, :] - positions[..., 0, :], centres[-1] - centres[0]
    return torch.atan2(d[..., 1], d[..., 0]) - torch.atan2(d0[1], d0[0])


@pytest.mark.parametrize("formulation", ["rigid", "lcp"])
def test_sliding_block_stops_at_v2_over_2mug(formulation):
    block = rectangle(1, 1, 0.02, 0.1, 0.5)
    v, dt = 0.5, 1e-3
    traj = simulate(block, None, formulation, dt=dt, duration=0.15, initial_velocity=[0, v, 0])
    distance = float(traj.final[0, 0] - traj.positions[0, 0, 0])
    # Velocity-level time stepping: Σ_k (v − kμg dt) dt = v²/(2μg) − v dt/2 + O(dt²).
    assert abs(distance - v**2 / (2 * 0.5 * G)) < v * dt
    assert abs(float(traj.final[0, 1])) < 1e-12
    # It has stopped: the last samples coincide.
    assert abs(float(traj.positions[-1, 0, 0] - traj.positions[-20, 0, 0])) < 1e-12


def test_diagonal_slide_shows_the_polygon_of_d():
    """D's 4 directions bound |f_x| + |f_y|: a diagonal slide goes √2 further; 16 do not."""
    block = rectangle(1, 1, 0.02, 0.1, 0.5)
    v, dt, mu = 0.5, 1e-3, 0.5
    diagonal = [0.0, v / math.sqrt(2), v / math.sqrt(2)]
    coulomb = v**2 / (2 * mu * G)
    for dirs, expected in ((4, math.sqrt(2) * coulomb), (16, coulomb / math.cos(math.pi / 16))):
        traj = simulate(block, None, dt=dt, duration=0.25, initial_velocity=diagonal,
                        friction_dirs=dirs)
        distance = float((traj.final[0] - traj.positions[0, 0]).norm())
        assert abs(distance - expected) < 2 * v * dt, dirs


@pytest.mark.parametrize("formulation", ["rigid", "lcp"])
def test_centred_push_translates_without_rotating(formulation):
    box = rectangle(4, 6, 0.02, 0.01, 0.4)  # x in [−0.06, 0.06], y in [−0.04, 0.04]
    push = Push((0.0, -0.04), (0.0, 1.0), speed=0.2, duration=0.2)
    traj = simulate(box, push, formulation)
    assert float(yaw(traj.positions, box.centres).abs().max()) < 1e-9
    shift = traj.final - box.centres
    # The finger starts one width behind the face: it travels one radius before touching.
    travel = 0.2 * 0.2 - FINGER_RADIUS
    np.testing.assert_allclose(shift.numpy(), np.tile([0.0, travel], (len(box), 1)), atol=1e-9)
    events = contact_events(traj.contact, box)
    assert events.assumptions_hold.all() and events.min_normal_impulse.min() >= 0.0


def test_offset_push_rotates_towards_the_free_side():
    box = rectangle(4, 6, 0.02, 0.01, 0.4)
    right = Push((0.04, -0.04), (0.0, 1.0), duration=0.3)
    left = Push((-0.04, -0.04), (0.0, 1.0), duration=0.3)
    traj = simulate(box, [right, left])
    turn = yaw(traj.final, box.centres)
    assert turn[0] > 0.05  # pushed right of the centre: counter-clockwise
    assert abs(float(turn[0] + turn[1])) < 1e-9  # mirror image


@pytest.mark.parametrize("dirs", [4, 8])
def test_lcp_and_rigid_formulations_agree(ell, dirs):
    pushes = random_pushes(ell, 3, seed=0, duration=0.3)
    rigid = simulate(ell, pushes, "rigid", friction_dirs=dirs)
    lcp = simulate(ell, pushes, "lcp", friction_dirs=dirs)
    assert rigid.positions.shape == lcp.positions.shape == (3, 31, 5, 2)
    assert float((rigid.positions - lcp.positions).abs().max()) < 1e-6
    assert float((rigid.final - ell.centres).norm(dim=-1).mean(-1).min()) > 0.02  # they moved


def test_line_solver_matches_cvxpy():
    g = torch.Generator().manual_seed(0)
    dirs = friction_directions(4, torch.zeros((), dtype=F64))
    batch, k = 6, 7
    rel = 0.1 * torch.randn(batch, k, 2, generator=g, dtype=F64)
    target = 0.2 * torch.randn(batch, 2, generator=g, dtype=F64)
    p = -(target @ dirs.T)
    q = rel @ perp(dirs).T
    c = 0.01 * torch.rand(batch, k, generator=g, dtype=F64)
    a = 0.01 + 0.01 * torch.rand(batch, generator=g, dtype=F64)
    lin = 0.05 * torch.randn(batch, generator=g, dtype=F64)
    omega, ok, weights = line_solve(a, lin, c, p, q)
    assert ok.all()
    # The weights are each cell's subgradient: a convex combination of its lines.
    np.testing.assert_allclose(weights.sum(2).numpy(), 1.0, atol=1e-12)
    for i in range(batch):
        w = cp.Variable()
        terms = [c[i, j].item() * cp.max(p[i].numpy() + q[i, j].numpy() * w) for j in range(k)]
        cp.Problem(cp.Minimize(0.5 * a[i].item() * w**2 + lin[i].item() * w + sum(terms))).solve()
        assert abs(omega[i].item() - w.value) < 1e-6


def test_free_rigid_step_by_interior_point_matches_cvxpy():
    """Without the finger the rigid LCP is the maximum-dissipation problem: minimise
    ½|v − v′|²_M + Σ μ_i M_i g dt max_j(−d_j·v_i)."""
    g = torch.Generator().manual_seed(1)
    k = 5
    masses = 0.01 + 0.02 * torch.rand(1, k, generator=g, dtype=F64)
    inertia = masses * 0.02**2 / 6
    bound = 0.5 * masses * G * 0.01
    arms = 0.05 * torch.randn(1, k, 2, generator=g, dtype=F64)
    momentum = 0.002 * torch.randn(1, 3, generator=g, dtype=F64)
    dirs = friction_directions(4, masses)
    twist, normal = rigid_lcp_step(masses, inertia, bound, arms, momentum, dirs, None, 1e-12)
    assert normal is None
    v = cp.Variable(3)
    mass_matrix = np.zeros((3, 3))
    friction = 0
    for i in range(k):
        J = np.array([[1, 0, 0], [-arms[0, i, 1].item(), 1, 0], [arms[0, i, 0].item(), 0, 1]])
        mass_matrix += J.T @ np.diag([inertia[0, i].item(), *[masses[0, i].item()] * 2]) @ J
        friction += bound[0, i].item() * cp.max(-(dirs.numpy() @ J[1:]) @ v)
    objective = 0.5 * cp.quad_form(v, mass_matrix) - momentum[0].numpy() @ v + friction
    cp.Problem(cp.Minimize(objective)).solve()
    np.testing.assert_allclose(twist[0].numpy(), v.value, atol=1e-6)


def test_steps_classified_coupled_are_solved_by_the_coupled_lcp(ell, monkeypatch):
    """The fallback: a step the classification cannot take (the line solver's check fails,
    no sliding root) is solved by the interior-point LCP with the finger's rows, and gives
    the same motion as the exact step."""
    monkeypatch.setattr(rigid_engine, "_compilable", lambda scene: False)
    pushes = random_pushes(ell, 2, seed=2, duration=0.3)
    fast = simulate(ell, pushes)
    classify = rigid_engine._classify

    def half_coupled(c, *args):
        mode, *rest = classify(c, *args)
        odd = (torch.arange(len(mode)) % 2 == 1) & (mode != FREE)
        return torch.where(odd, COUPLED, mode), *rest

    monkeypatch.setattr(rigid_engine, "_classify", half_coupled)
    slow = simulate(ell, pushes)
    assert bool((slow.contact.mode == COUPLED).any())
    assert float((fast.positions - slow.positions).abs().max()) < 1e-7


@pytest.mark.parametrize("friction", [0.1, FINGER.friction])
def test_the_finger_pushes_and_never_pulls(ell, friction):
    """A one-sided contact: the normal impulse is never negative, in both formulations, and
    with little finger friction the finger slides along the object."""
    finger = Finger(friction=friction)
    pushes = random_pushes(ell, 3, seed=4, duration=0.4)
    for formulation in ("rigid", "lcp"):
        record = simulate(ell, pushes, formulation, finger=finger).contact
        assert float(record.normal_impulse.min()) >= -1e-12
        assert bool(record.touching.any(1).all())
    events = contact_events(record, ell, finger)
    assert events.touched.all()


def test_rigid_rollout_gradients_match_finite_differences(ell):
    push = random_pushes(ell, 1, seed=3, duration=0.15)[0]

    def final(masses, frictions):
        return simulate(ell, push, masses=masses, frictions=frictions).final

    inputs = (ell.masses.clone().requires_grad_(), ell.frictions.clone().requires_grad_())
    assert torch.autograd.gradcheck(final, inputs, eps=1e-7, atol=1e-6, rtol=1e-4)


def test_lcp_rollout_gradients_match_finite_differences():
    obj = from_mask([[1, 1], [1, 0]], 0.02, [0.01, 0.02, 0.015], [0.3, 0.6, 0.4])
    push = random_pushes(obj, 1, seed=5, duration=0.12)[0]

    def final(masses, frictions):
        return simulate(obj, push, "lcp", masses=masses, frictions=frictions, tol=1e-11).final

    inputs = (obj.masses.clone().requires_grad_(), obj.frictions.clone().requires_grad_())
    assert torch.autograd.gradcheck(final, inputs, eps=1e-7, atol=1e-6, rtol=1e-4)


def test_batched_parameters_and_sample_times(ell):
    pushes = random_pushes(ell, 2, seed=1, duration=0.2)
    masses = torch.stack([ell.masses, 2 * ell.masses])
    traj = simulate(ell, pushes, masses=masses, sample_times=[0.0, 0.1, 0.2])
    assert traj.positions.shape == (2, 3, 5, 2)
    np.testing.assert_allclose(traj.times.numpy(), [0.0, 0.1, 0.2])
    one = simulate(ell, pushes[1], masses=2 * ell.masses, sample_times=[0.0, 0.1, 0.2])
    assert one.positions.shape == (3, 5, 2)
    assert float((one.positions - traj.positions[1]).abs().max()) < 1e-12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"formulation": "euler"}, "formulation must be one of"),
        ({"dt": 0.0}, "dt must be > 0"),
        ({"dt": 0.03}, "duration must be a multiple of dt"),
        ({"masses": torch.ones(4, dtype=F64)}, r"masses must have shape \(5,\)"),
        ({"masses": -torch.ones(5, dtype=F64)}, "masses must be > 0"),
        ({"frictions": torch.full((5,), -0.1, dtype=F64)}, "frictions must be >= 0"),
        ({"sample_times": [0.015]}, "sample_times must be multiples of 0.01"),
        ({"sample_times": [0.5]}, r"sample_times must lie in \[0, 0.1\]"),
        ({"initial_velocity": [0.0, 1.0]}, r"initial_velocity must have shape \(3,\)"),
        ({"initial_velocity": [0.0, float("nan"), 1.0]}, "initial_velocity must be finite"),
    ],
)
def test_bad_simulate_arguments_raise(ell, kwargs, message):
    push = Push((0.0, -0.022), (0.0, 1.0), duration=0.1)
    with pytest.raises(ValueError, match=message):
        simulate(ell, push, **kwargs)


def test_push_that_misses_raises(ell):
    with pytest.raises(ValueError, match=r"push\.contact .* not on the outer boundary"):
        simulate(ell, Push((0.0, -0.5), (0.0, 1.0), duration=0.1))
    with pytest.raises(ValueError, match="duration must be given"):
        simulate(ell, None)


def test_sliding_and_locked_steps_have_exact_gradients(ell):
    """A push whose finger slides and whose motion locks a cell's velocity on a switch of D:
    the implicit gradients of both root conditions against finite differences."""
    finger = Finger(friction=0.2)
    push = random_pushes(ell, 1, seed=5, duration=0.2)[0]
    modes = simulate(ell, push, finger=finger).contact.mode
    assert int((modes == SLIDE).sum()) > 0 and int((modes == LOCK).sum()) > 0

    def final(masses, frictions):
        return simulate(ell, push, masses=masses, frictions=frictions, finger=finger).final

    inputs = (ell.masses.clone().requires_grad_(), ell.frictions.clone().requires_grad_())
    assert torch.autograd.gradcheck(final, inputs, eps=1e-7, atol=1e-6, rtol=1e-4)
