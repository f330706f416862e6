"""The compiled adjoint (:mod:`physid.pushing.rigid_adjoint`) against the torch step's autograd
graph, which it replaces for gradients with respect to the masses and frictions: the same
gradients in every mode, and finite differences."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from physid.pushing import random_pushes, rigid_engine, simulate
from physid.pushing.chapters.pushing_identify import block
from physid.pushing.engine import Scene, Stepping
from physid.pushing.finger import FREE, LOCK, SLIDE, STICK, FaceGeometry, Finger
from physid.pushing.lcp import SolverError
from physid.pushing.objects import load_object
from physid.pushing.observations import draw_truth
from physid.pushing.pushes import PushBatch

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def gradients(obj, pushes, torch_path: bool, monkeypatch, masses=None, frictions=None,
              **kwargs):
    """The positions, record and gradients of a weighted sum of every position with respect to
    the masses and frictions, by the compiled adjoint or by the torch step."""
    masses = (obj.masses if masses is None else masses).clone().requires_grad_()
    frictions = (obj.frictions if frictions is None else frictions).clone().requires_grad_()
    with monkeypatch.context() as m:
        if torch_path:
            m.setattr(rigid_engine, "_adjoint_applies", lambda scene: False)
        traj = simulate(obj, pushes, masses=masses, frictions=frictions, **kwargs)
    weights = torch.linspace(0.3, 1.7, traj.positions.numel(), dtype=torch.float64)
    (traj.positions * weights.reshape(traj.positions.shape)).sum().backward()
    return traj, masses.grad, frictions.grad


def assert_same_gradients(obj, pushes, monkeypatch, compiled_pushes=None, **kwargs):
    """The compiled adjoint's gradients equal the torch step's; ``compiled_pushes`` of them (all
    by default) took the compiled path."""
    before = rigid_engine.GRADIENT_PATHS["compiled"]
    compiled, g_m, g_f = gradients(obj, pushes, False, monkeypatch, **kwargs)
    expected = len(compiled.positions) if compiled_pushes is None else compiled_pushes
    assert rigid_engine.GRADIENT_PATHS["compiled"] == before + expected
    reference, r_m, r_f = gradients(obj, pushes, True, monkeypatch, **kwargs)
    assert float((compiled.positions - reference.positions).abs().max()) < 1e-9
    torch.testing.assert_close(compiled.contact.mode, reference.contact.mode)
    for ours, theirs in ((g_m, r_m), (g_f, r_f)):
        assert float((ours - theirs).abs().max()) <= 1e-9 * float(theirs.abs().max())
    return compiled


def test_a_batch_mixing_every_mode(monkeypatch):
    obj, push = block(10)
    pushes = [push, *random_pushes(obj, 5, seed=0, duration=push.duration)]
    traj = assert_same_gradients(obj, pushes, monkeypatch)
    counts = np.bincount(traj.contact.mode.flatten().numpy(), minlength=5)
    assert all(counts[m] > 0 for m in (FREE, STICK, SLIDE, LOCK)), counts


@pytest.mark.parametrize("name", ["hammer", "crimp", "ranch", "toolbox", "book"])
def test_the_chapters_objects_and_truths(monkeypatch, name):
    """On the hammer, the kernel leaves a step of the second push to torch: that push takes
    the torch path, the others the compiled one, in one call."""
    base = load_object(name)
    masses, frictions = draw_truth(base, 7)
    pushes = random_pushes(base, 3, seed=3, duration=1.0)
    before = rigid_engine.GRADIENT_PATHS["torch"]
    assert_same_gradients(base, pushes, monkeypatch, masses=masses, frictions=frictions,
                          compiled_pushes=2 if name == "hammer" else 3)
    # The torch path's reference counts all three.
    assert rigid_engine.GRADIENT_PATHS["torch"] == before + (4 if name == "hammer" else 3)


@pytest.mark.parametrize("friction_dirs", [16, 64])
def test_finer_friction_polygons(monkeypatch, friction_dirs):
    obj = load_object("hammer")
    pushes = random_pushes(obj, 2, seed=1, duration=0.5)
    assert_same_gradients(obj, pushes, monkeypatch, friction_dirs=friction_dirs)


def test_a_slippery_finger_that_slides_and_locks(monkeypatch):
    obj = load_object("hammer")
    pushes = random_pushes(obj, 3, seed=5, duration=0.6)
    traj = assert_same_gradients(obj, pushes, monkeypatch, finger=Finger(friction=0.2))
    modes = set(traj.contact.mode.flatten().tolist())
    assert {SLIDE, LOCK} <= modes, modes


def test_restarts_from_a_moving_pose_slide_freely(monkeypatch):
    """Eq. (1)'s restarted intervals: moving objects slide without the finger (the free
    slide's closed form) and stop. Two of these slide with a cell on a switch of D, which the
    kernel leaves to torch: those two take the torch path."""
    obj = load_object("hammer")
    pushes = random_pushes(obj, 4, seed=5, duration=0.3)
    rng = np.random.default_rng(0)
    twist = rng.normal(scale=[0.5, 0.05, 0.05], size=(4, 3))
    pose = rng.normal(scale=[0.1, 0.01, 0.01], size=(4, 3))
    traj = assert_same_gradients(obj, pushes, monkeypatch, compiled_pushes=2,
                                 initial_velocity=twist, initial_pose=pose,
                                 start_time=[0.0, 0.1, 0.2, 0.3])
    assert bool((traj.contact.mode == FREE).any())


def test_matches_finite_differences(monkeypatch):
    obj, push = block(10)
    pushes = random_pushes(obj, 2, seed=0, duration=0.3)

    def final(masses, frictions):
        before = rigid_engine.GRADIENT_PATHS["compiled"]
        out = simulate(obj, pushes, masses=masses, frictions=frictions).final
        assert rigid_engine.GRADIENT_PATHS["compiled"] == before + 2
        return out

    inputs = (obj.masses.clone().requires_grad_(), obj.frictions.clone().requires_grad_())
    assert torch.autograd.gradcheck(final, inputs, eps=1e-7, atol=1e-6, rtol=1e-4)


def test_steps_left_to_torch_take_the_torch_path_and_are_counted():
    """A free slide along a switch of D has no tape: the whole call runs the torch step."""
    obj, push = block(24)
    before = rigid_engine.GRADIENT_PATHS["torch"]
    masses = obj.masses.clone().requires_grad_()
    traj = simulate(obj, push, masses=masses, initial_velocity=[0.0, -0.05, -0.05])
    traj.final.sum().backward()
    assert rigid_engine.GRADIENT_PATHS["torch"] == before + 1
    assert bool(torch.isfinite(masses.grad).all())


def test_a_gradient_in_the_push_takes_the_torch_path():
    obj, push = block(10)
    base = PushBatch.from_pushes(obj, [push])
    velocity = base.velocity.clone().requires_grad_()
    scene = Scene(obj.centres, obj.masses[None], obj.frictions[None], obj.cell_side,
                  torch.zeros(1, 3, dtype=torch.float64), replace(base, velocity=velocity),
                  FaceGeometry.of(obj, obj.centres))
    before = rigid_engine.GRADIENT_PATHS["torch"]
    positions, _ = rigid_engine.rollout(scene, Stepping(0.01, 10))
    positions[0, -1].sum().backward()
    assert rigid_engine.GRADIENT_PATHS["torch"] == before + 1
    assert velocity.grad is not None


def test_an_undefined_implicit_derivative_raises():
    """A slide whose root condition does not depend on the slip (its slope zeroed in the tape)
    has no implicit derivative: the adjoint says so instead of dividing by zero."""
    obj = load_object("hammer")
    finger = Finger(friction=0.2)
    pushes = PushBatch.from_pushes(obj, random_pushes(obj, 1, seed=5, duration=0.6),
                                   finger=finger)
    scene = Scene(obj.centres, obj.masses[None], obj.frictions[None], obj.cell_side,
                  torch.zeros(1, 3, dtype=torch.float64), pushes,
                  FaceGeometry.of(obj, obj.centres))
    run = rigid_engine._KernelRun(scene, Stepping(0.01, 60, finger=finger), taping=True)
    assert not len(run.run())
    sliding = run.tape_int[0, :, 0] == SLIDE
    assert sliding.any()
    run.tape_float[0, sliding, 1] = 0.0
    with pytest.raises(SolverError, match="implicit gradient"):
        run.adjoint(torch.ones(run.positions.shape, dtype=torch.float64))
