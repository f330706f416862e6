"""The shaken box (physid.inference.box) against its pybullet "real world" (physid.inference.panda).

Measured (dt = 0.01 s, 300 steps, the paper's motion): the model's rollout from the recorded
start under the recorded mount inputs stays within 2.4 mm (empty box) and 2.8 mm (with the
weights) of pybullet's four points (the maximum over the motion of each point's distance;
the points are 1 m from the lid). Ignoring the damping gives 12–20 mm, gravity of the wrong
sign 60–100 mm.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch

from physid.core.simulator import ResidualSimulator, Simulator
from physid.core.target import Limits
from physid.inference import box as B
from physid.inference import panda
from physid.inference.likelihood import TrajectoryLikelihood

BOX_NAMES = tuple(B.PHASE1_LIMITS)
WEIGHT_NAMES = tuple(B.PHASE2_LIMITS)
#: Above the measured 2.4 / 2.8 mm model-vs-pybullet point error.
POINT_BOUND = 0.004


def _t(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=torch.float64)


def _true_theta(names) -> torch.Tensor:
    values = {**B.TRUE_BOX, **B.TRUE_WEIGHTS}
    return _t([values[n] for n in names])


@pytest.fixture(scope="module")
def empty():
    return panda.record()


@pytest.fixture(scope="module")
def loaded():
    return panda.record(weights=B.TRUE_WEIGHTS)


def _point_error(model, theta, rec, inputs=None) -> float:
    u = _t(rec.inputs)
    s0 = _t(rec.states[0])
    run = model.rollout(theta, s0, u.shape[0], u if inputs is None else inputs)
    states = torch.cat((s0[None], run))
    points = model.world_points(states[:-1], u).numpy()
    return float(np.linalg.norm((points - rec.points[:-1]).reshape(-1, 4, 3), axis=-1).max())


# -- model against pybullet ----------------------------------------------------------------
@pytest.mark.parametrize("which", ["empty", "loaded"])
def test_model_matches_pybullet(which, request):
    rec = request.getfixturevalue(which)
    assert rec.states.shape == (301, 4) and rec.inputs.shape == (300, 21)
    assert rec.points.shape == (301, 12) and rec.duration == pytest.approx(3.0)
    # The box swings visibly (relative to the mount).
    assert np.abs(rec.states[:, :2] - rec.states[0, :2]).max() > 0.05
    with_weights = which == "loaded"
    model = B.ShakenBox(names=BOX_NAMES, with_weights=with_weights)
    theta = _true_theta(BOX_NAMES)
    error = _point_error(model, theta, rec)
    assert error < POINT_BOUND
    # The bound is tight enough to catch a model without damping ...
    undamped = theta.clone()
    undamped[BOX_NAMES.index("d1")] = 0.0
    undamped[BOX_NAMES.index("d2")] = 0.0
    assert _point_error(model, undamped, rec) > 2.5 * POINT_BOUND
    # ... or with gravity of the wrong sign (g − a → −g − a: a shifted by 2 g downwards).
    flipped = _t(rec.inputs).clone()
    flipped[:, 5] -= 2 * model.gravity
    assert _point_error(model, theta, rec, flipped) > 10 * POINT_BOUND
    # The recorded states reproduce the recorded points (geometry and conventions agree).
    mine = model.world_points(_t(rec.states[:-1]), _t(rec.inputs)).numpy()
    assert np.abs(mine - rec.points[:-1]).max() < 1e-5


def test_recording_starts_at_rest_in_equilibrium(empty, loaded):
    for rec in (empty, loaded):
        assert np.abs(rec.states[:15, 2:]).max() < 1e-3  # the arm starts moving at 0.2 s
        np.testing.assert_allclose(rec.inputs[:15, 3:6], 0.0, atol=1e-6)


def test_recording_noise_is_seeded():
    motion = panda.Motion(panda.HOME, ((5, 0.1, 0.0),), 0.261, 2.0, 0.2)
    clean = panda.record(motion=motion)
    a = panda.record(motion=motion, noise=0.01, seed=3)
    b = panda.record(motion=motion, noise=0.01, seed=3)
    np.testing.assert_array_equal(a.states, b.states)
    assert 0.005 < np.std(a.states - clean.states) < 0.02
    np.testing.assert_array_equal(a.inputs, clean.inputs)


# -- the model alone -----------------------------------------------------------------------
def test_is_a_simulator():
    model = B.ShakenBox()
    assert isinstance(model, Simulator)
    assert (model.state_size, model.input_size, model.observation_size) == (4, 21, 12)
    assert model.param_names == BOX_NAMES
    assert len(B.INPUT_LAYOUT) == B.INPUT_SIZE == 21
    assert B.ShakenBox(with_weights=True).mass() == pytest.approx(1.92)
    for name, (low, high) in B.PHASE1_LIMITS.items():
        assert low <= B.TRUE_BOX[name] <= high
    for name, (low, high) in B.PHASE2_LIMITS.items():
        assert low <= B.TRUE_WEIGHTS[name] <= high
    B.ShakenBox().check_theta(_true_theta(BOX_NAMES))


def test_energy_conserved_on_a_static_mount():
    s0 = _t([0.3, -0.2, 0.0, 0.0])
    drifts = []
    for dt in (0.01, 0.001):
        model = B.ShakenBox(names=("d1", "d2"), dt=dt)
        theta = _t([0.0, 0.0])
        n = int(round(3 / dt))
        states = torch.cat((s0[None], model.rollout(theta, s0, n, B.static_input(n))))
        assert states[:, 0].abs().max() > 0.25  # it swings
        energy = model.energy(theta, states)
        drifts.append(float((energy - energy[0]).abs().max()))
    assert drifts[0] < 0.005  # of |E| = 1.69 J
    assert drifts[1] < drifts[0] / 5  # O(dt)
    # With damping the energy is dissipated.
    model = B.ShakenBox(names=("d1", "d2"))
    theta = _t([0.1, 0.1])
    states = model.rollout(theta, s0, 300, B.static_input(300))
    assert model.energy(theta, states[-1]) < model.energy(theta, s0) - 0.05


def test_hanging_angles_are_an_equilibrium():
    model = B.ShakenBox(names=WEIGHT_NAMES, with_weights=True)
    theta = _t([0.1, 0.05, 0.0, -0.02])  # unbalanced
    _, moment = model.mass_properties(theta)
    alpha, beta = B.hanging_angles(moment.numpy(), [0.0, 0.0, 1.0])
    assert abs(beta) > 0.05
    s0 = _t([alpha, beta, 0.0, 0.0])
    states = model.rollout(theta, s0, 100, B.static_input(100))
    assert states.sub(s0).abs().max() < 1e-9


def test_gradients_match_finite_differences(loaded):
    model = B.ShakenBox(names=BOX_NAMES + WEIGHT_NAMES, with_weights=True)
    theta = torch.cat((_true_theta(BOX_NAMES), _t([0.1, 0.03, -0.05, -0.02]))).requires_grad_()
    s0 = _t([0.1, -0.2, 0.5, -0.3]).requires_grad_()
    u = _t(loaded.inputs[20:26])  # while the arm accelerates

    def observed(theta, s0):
        return model.observe(model.rollout(theta, s0, 6, u))

    assert torch.autograd.gradcheck(observed, (theta, s0), eps=1e-6, atol=1e-6)


def test_batching_broadcasts(loaded):
    model = B.ShakenBox(names=WEIGHT_NAMES, with_weights=True)
    u = _t(loaded.inputs[:40])
    thetas = _t([[0.1, 0.0, -0.1, 0.0], [0.05, 0.02, 0.0, -0.03], [0.0, 0.0, 0.0, 0.0]])
    s0 = _t([[0.0, 0.0, 0.0, 0.0], [0.1, -0.1, 0.2, 0.0]])
    batched = model.rollout(thetas[:, None], s0[None], 40, u)
    assert batched.shape == (3, 2, 40, 4)
    for i in range(3):
        for j in range(2):
            one = model.rollout(thetas[i], s0[j], 40, u)
            torch.testing.assert_close(batched[i, j], one, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("with_weights", [False, True])
def test_compiled_rollout_matches_eager_autograd(loaded, with_weights):
    """The compiled kernels (steps and points) and their hand-derived adjoints against eager
    torch with autograd, on the likelihoods' broadcasting (particles × windows, the inputs
    shared by the particles)."""
    names = BOX_NAMES + (WEIGHT_NAMES if with_weights else ())
    compiled = B.ShakenBox(names=names, with_weights=with_weights, compiled=True)
    eager = B.ShakenBox(names=names, with_weights=with_weights, compiled=False)
    gen = torch.Generator().manual_seed(1)
    base = torch.cat((_true_theta(BOX_NAMES), _t([0.1, 0.03, -0.05, -0.02])))[: len(names)]
    noise = torch.randn(4, 1, len(names), generator=gen, dtype=torch.float64)
    theta = base * (1 + 0.05 * noise)
    s0 = _t(loaded.states[0]) + 0.2 * torch.randn(4, 3, 4, generator=gen, dtype=torch.float64)
    u = _t(loaded.inputs[:120]).reshape(3, 40, 21)  # three windows of 40 steps
    weights = torch.randn(4, 3, 40, 4, generator=gen, dtype=torch.float64)
    point_weights = torch.randn(4, 3, 40, 12, generator=gen, dtype=torch.float64)
    results = []
    for model in (compiled, eager):
        th, st = theta.clone().requires_grad_(), s0.clone().requires_grad_()
        states = model.rollout(th, st, 40, u)
        points = model.observe(states)
        loss = (states * weights).sum() + (points * point_weights).sum()
        results.append((states, points, *torch.autograd.grad(loss, (th, st))))
    assert results[0][0].shape == (4, 3, 40, 4) and results[0][1].shape == (4, 3, 40, 12)
    for ours, reference in zip(results[0], results[1], strict=True):
        scale = reference.abs().max()
        assert (ours - reference).abs().max() <= 1e-12 * scale
    torch.testing.assert_close(
        eager.simulate_autograd(theta[0, 0], s0[0, 0], 40, u[0]), results[1][0][0, 0]
    )


def test_compiled_rollout_falls_back_to_eager_where_it_cannot_run(loaded, monkeypatch):
    """Inputs that need a gradient, and ``PHYSID_COMPILE=0``, take the eager step (the kernel
    gives no gradient with respect to the mount's motion)."""
    u = _t(loaded.inputs[:10]).requires_grad_()
    theta, s0 = _true_theta(BOX_NAMES), _t(loaded.states[0])
    B.ShakenBox().rollout(theta, s0, 10, u).sum().backward()
    assert u.grad is not None and u.grad.abs().max() > 0
    calls = []
    run = B.box_kernel.forward
    monkeypatch.setattr(B.box_kernel, "forward", lambda *args: calls.append(args) or run(*args))
    monkeypatch.setenv("PHYSID_COMPILE", "0")
    B.ShakenBox().rollout(theta, s0, 10, u.detach())
    assert calls == []
    monkeypatch.delenv("PHYSID_COMPILE")
    B.ShakenBox().rollout(theta, s0, 10, u.detach())
    assert len(calls) == 1


def test_swapping_the_weights_changes_nothing(loaded):
    model = B.ShakenBox(names=WEIGHT_NAMES, with_weights=True)
    u, s0 = _t(loaded.inputs), _t(loaded.states[0])
    a = model.rollout(_t([0.1, 0.05, -0.08, 0.02]), s0, 300, u)
    b = model.rollout(_t([-0.08, 0.02, 0.1, 0.05]), s0, 300, u)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_an_unbalanced_pair_tilts_the_box():
    model = B.ShakenBox(names=WEIGHT_NAMES, with_weights=True, fixed={"d1": 0.15, "d2": 0.15})
    s0 = _t([0.0, 0.0, 0.0, 0.0])
    balanced = model.rollout(_t([0.125, 0.0, -0.125, 0.0]), s0, 500, B.static_input(500))
    unbalanced = model.rollout(_t([0.125, 0.0, 0.0, 0.0]), s0, 500, B.static_input(500))
    # Mean over the last second: balanced hangs nearly straight, unbalanced tilts (β < 0:
    # the heavy side, +x, swings down).
    assert balanced[-100:, 1].mean().abs() < 0.02
    assert unbalanced[-100:, 1].mean() < -0.1  # equilibrium: −atan(0.064 / 0.484) = −0.13


def test_observation_frame_preserves_differences(loaded):
    model = B.ShakenBox()
    gen = torch.Generator().manual_seed(0)
    s1 = 0.3 * torch.randn(300, 4, generator=gen, dtype=torch.float64)
    s2 = 0.3 * torch.randn(300, 4, generator=gen, dtype=torch.float64)
    u = _t(loaded.inputs)
    mount = (model.observe(s1) - model.observe(s2)).unflatten(-1, (4, 3)).norm(dim=-1)
    world = (model.world_points(s1, u) - model.world_points(s2, u)).unflatten(-1, (4, 3))
    torch.testing.assert_close(world.norm(dim=-1), mount, rtol=1e-12, atol=1e-12)
    # The axis points are 1 m from the lid's centre, which is LID_OFFSET below the joint.
    points = model.observe(s1).unflatten(-1, (4, 3))
    torch.testing.assert_close(
        points[:, 0].norm(dim=-1), torch.full((300,), B.LID_OFFSET, dtype=torch.float64)
    )
    torch.testing.assert_close(
        (points[:, 1:] - points[:, :1]).norm(dim=-1), torch.ones(300, 3, dtype=torch.float64)
    )


def test_rollout_cost():
    import time

    model = B.ShakenBox(names=WEIGHT_NAMES, with_weights=True)
    theta = torch.zeros(50, 4, dtype=torch.float64, requires_grad=True)
    u = B.static_input(300)
    start = time.perf_counter()
    model.observe(model.rollout(theta, _t([0.1, 0.0, 0.0, 0.0]), 300, u)).sum().backward()
    assert time.perf_counter() - start < 3.0  # 5 ms compiled, 0.28 s eager, on one thread
    assert torch.isfinite(theta.grad).all()


# -- bad input -----------------------------------------------------------------------------
def _theta(**changes) -> torch.Tensor:
    values = {**B.TRUE_BOX, **changes}
    return _t([values[n] for n in BOX_NAMES])


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"Ixx": 0.03}, "not positive definite"),  # less than m cz² about the joint
        ({"Ixx": 0.05, "Iyy": 0.05, "Izz": 0.1}, "triangle"),
        ({"d1": -0.01}, "d1 must be >= 0"),
        ({"Ixy": math.nan}, "theta"),
        ({"cz": math.inf}, "theta"),
    ],
)
def test_check_theta_refuses_unphysical(changes, match):
    with pytest.raises(ValueError, match=match):
        B.ShakenBox().check_theta(_theta(**changes))


def test_check_theta_refuses_wrong_width_and_accepts_weights_anywhere():
    with pytest.raises(ValueError, match="theta must have a last axis of 11"):
        B.ShakenBox().check_theta(_t([0.07] * 10))
    with pytest.raises(TypeError, match="theta"):
        B.ShakenBox().check_theta(torch.zeros(11, dtype=torch.float32))
    # Limits are the likelihood's business: a weight off the bottom is still physical.
    B.ShakenBox(names=WEIGHT_NAMES, with_weights=True).check_theta(_t([0.5, 0.0, -0.3, 0.2]))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"names": ("Ixx", "mass")}, ValueError, "names must be distinct"),
        ({"names": ("Ixx", "Ixx")}, ValueError, "names must be distinct"),
        ({"names": ()}, ValueError, "names must be distinct"),
        ({"names": "Ixx"}, TypeError, "names"),
        ({"names": ("w1x",)}, ValueError, "with_weights"),
        ({"with_weights": 1}, TypeError, "with_weights"),
        ({"fixed": {"foo": 1.0}}, ValueError, "unknown"),
        ({"fixed": {"d2": -1.0}}, ValueError, "fixed\\['d2'\\]"),
        ({"names": ("d1",), "fixed": {"Ixx": 0.01}}, ValueError, "fixed: the box's inertia"),
        ({"dt": 0.0}, ValueError, "dt"),
        ({"gravity": -9.81}, ValueError, "gravity"),
        ({"compiled": 1}, TypeError, "compiled"),
    ],
)
def test_constructor_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        B.ShakenBox(**kwargs)


def test_rollout_and_simulate_refuse_bad_inputs():
    model = B.ShakenBox()
    theta, s0 = _true_theta(BOX_NAMES), _t([0.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="u must be given"):
        model.rollout(theta, s0, 5, None)
    with pytest.raises(ValueError, match="u must have shape"):
        model.rollout(theta, s0, 5, torch.zeros(5, 20, dtype=torch.float64))
    with pytest.raises(ValueError, match="u must have shape"):
        model.simulate(theta, s0, 5, B.static_input(4))
    with pytest.raises(ValueError, match="s0"):
        model.simulate(theta, _t([0.0, 0.0, 0.0]), 4, B.static_input(4))
    with pytest.raises(ValueError, match="not positive definite"):
        model.simulate(_theta(Ixx=0.01), s0, 4, B.static_input(4))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dt": 0.0105}, ValueError, "dt must be a multiple"),
        ({"dt": -0.01}, ValueError, "dt"),
        ({"box": {"mass": 1.0}}, ValueError, "unknown"),
        ({"box": {"Ixx": 0.01}}, ValueError, "box is not physical"),
        ({"box": [0.1]}, TypeError, "box"),
        ({"weights": {"w1x": 0.1}}, ValueError, "weights"),
        ({"weights": {**B.TRUE_WEIGHTS, "w1x": math.nan}}, ValueError, "weights\\['w1x'\\]"),
        ({"noise": -0.1}, ValueError, "noise"),
        ({"seed": -1}, ValueError, "seed"),
        ({"motion": "shake"}, TypeError, "motion"),
    ],
)
def test_record_refuses_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        panda.record(**kwargs)


# -- the likelihood ------------------------------------------------------------------------
@pytest.mark.parametrize("windows", [1, 5])
def test_plugs_into_the_trajectory_likelihood(loaded, windows):
    model = B.ShakenBox(names=WEIGHT_NAMES, with_weights=True)
    limits = Limits.from_dict(B.PHASE2_LIMITS)
    target = TrajectoryLikelihood(
        model, loaded.states, limits, inputs=loaded.inputs, shooting_windows=windows
    )
    truth = limits.normalise(_t([[B.TRUE_WEIGHTS[n] for n in WEIGHT_NAMES]]))
    swapped = limits.normalise(_t([[-0.125, 0.0, 0.125, 0.0]]))
    centre = limits.normalise(_t([[0.0, 0.0, 0.0, 0.0]]))
    x = target.on_reference(torch.cat((truth, swapped, centre)))
    value, grad = target.log_density_and_grad(x)
    assert torch.isfinite(value).all() and torch.isfinite(grad).all()
    assert grad.shape == x.shape
    assert value[0] > value[2] + 10.0
    torch.testing.assert_close(value[0], value[1], rtol=1e-9, atol=1e-6)  # swap symmetry


@pytest.mark.parametrize("windows", [1, 5])
@pytest.mark.parametrize("compiled", [True, False])
def test_residuals_summed_in_the_rollout_equal_the_likelihoods_own(loaded, windows, compiled):
    """The box is a ResidualSimulator: the likelihood takes its sums of squared residuals
    instead of comparing every observation itself, with the same values, constraints and
    gradients (compiled: summed in the kernel; eager: in torch)."""
    assert isinstance(B.ShakenBox(), ResidualSimulator)
    model = B.ShakenBox(names=BOX_NAMES, compiled=compiled)
    limits = Limits.from_dict(B.PHASE1_LIMITS)
    scale = (np.zeros(12), np.full(12, 0.3))
    target = TrajectoryLikelihood(
        model,
        loaded.states,
        limits,
        inputs=loaded.inputs,
        shooting_windows=windows,
        observation_scale=scale,
    )
    assert target.fused
    plain = copy.copy(target)
    plain.fused = False
    x = target.initial(6).requires_grad_()
    results = []
    for t in (target, plain):
        value, constraints = t.density_and_constraints(x)
        grad = torch.autograd.grad(value.sum() + constraints.sum(), x)[0]
        results.append((value, constraints, grad))
    for ours, reference in zip(*results, strict=True):
        torch.testing.assert_close(ours, reference, rtol=1e-10, atol=1e-10)
    # Several references with single shooting: one sum per reference.
    if windows == 1:
        two = TrajectoryLikelihood(
            model,
            np.stack((loaded.states, loaded.states)),
            limits,
            inputs=loaded.inputs,
            observation_scale=scale,
        )
        assert two.fused
        torch.testing.assert_close(two.log_density(x.detach()), target.log_density(x.detach()))


def test_a_singular_inertia_gives_non_finite_states_not_an_error(loaded):
    """Where the joint-space inertia is singular the compiled rollout is not finite, as the
    eager one, and nothing raises (a sampler may propose any parameters)."""
    model = B.ShakenBox(names=BOX_NAMES)
    theta = torch.zeros(len(BOX_NAMES), dtype=torch.float64)  # no inertia at all
    for compiled in (True, False):
        states = dataclasses.replace(model, compiled=compiled).rollout(
            theta, _t(loaded.states[0]), 3, _t(loaded.inputs[:3])
        )
        assert not torch.isfinite(states).all()
