"""The compiled rigid step (:mod:`physid.pushing.rigid_kernel`) against the torch step it
replaces when no gradient is needed: the same trajectories, modes and records."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from physid.pushing import random_pushes, rigid_engine, simulate
from physid.pushing.chapters.pushing_identify import block
from physid.pushing.finger import FREE, LOCK, SLIDE, STICK
from physid.pushing.objects import load_object
from physid.pushing.observations import draw_truth

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def compiled_and_torch(monkeypatch, obj, pushes, **kwargs):
    """The same call run compiled and by the torch step."""
    calls = []
    compiled_rollout = rigid_engine.compiled_rollout

    def counted(*args):
        calls.append(1)
        return compiled_rollout(*args)

    with monkeypatch.context() as m:
        m.setattr(rigid_engine, "compiled_rollout", counted)
        with torch.no_grad():
            compiled = simulate(obj, pushes, **kwargs)
    assert calls, "the compiled step did not run"
    with monkeypatch.context() as m:
        m.setattr(rigid_engine, "_compilable", lambda scene: False)
        with torch.no_grad():
            reference = simulate(obj, pushes, **kwargs)
    return compiled, reference


def assert_same(compiled, reference, modes: bool = True) -> None:
    assert float((compiled.positions - reference.positions).abs().max()) < 1e-9
    if modes:
        torch.testing.assert_close(compiled.contact.mode, reference.contact.mode)
    torch.testing.assert_close(compiled.contact.touching, reference.contact.touching)
    torch.testing.assert_close(compiled.contact.normal_impulse, reference.contact.normal_impulse,
                               atol=1e-8, rtol=1e-6)
    torch.testing.assert_close(compiled.contact.side, reference.contact.side)
    torch.testing.assert_close(compiled.contact.point, reference.contact.point, atol=1e-9,
                               rtol=0)


@pytest.mark.parametrize("name", ["hammer", "crimp", "ranch", "toolbox", "book"])
def test_same_pushes_as_the_torch_step_on_the_chapters_objects(monkeypatch, name):
    """Ground truths and random pushes as the identification chapter draws them."""
    base = load_object(name)
    masses, frictions = draw_truth(base, 7)
    pushes = random_pushes(base, 6, seed=3, duration=1.0)
    compiled, reference = compiled_and_torch(monkeypatch, base, pushes, masses=masses,
                                             frictions=frictions)
    assert_same(compiled, reference)


def test_a_batch_mixing_every_mode(monkeypatch):
    """Small blocks slide and lock; the random pushes of the 88-cell block mix all modes."""
    obj, push = block(10)
    pushes = [push, *random_pushes(obj, 5, seed=0, duration=push.duration)]
    compiled, reference = compiled_and_torch(monkeypatch, obj, pushes)
    assert_same(compiled, reference)
    counts = np.bincount(compiled.contact.mode.flatten().numpy(), minlength=5)
    assert all(counts[m] > 0 for m in (FREE, STICK, SLIDE, LOCK)), counts


def test_restarts_from_a_moving_pose(monkeypatch):
    """Restarted pushes (Eq. (1)'s intervals): moving objects that slide freely and stop."""
    obj = load_object("hammer")
    pushes = random_pushes(obj, 4, seed=5, duration=0.3)
    rng = np.random.default_rng(0)
    twist = rng.normal(scale=[0.5, 0.05, 0.05], size=(4, 3))
    pose = rng.normal(scale=[0.1, 0.01, 0.01], size=(4, 3))
    compiled, reference = compiled_and_torch(monkeypatch, obj, pushes, initial_velocity=twist,
                                             initial_pose=pose, start_time=[0.0, 0.1, 0.2, 0.3])
    # Free slides are solved exactly here and by the interior-point LCP (tolerance 1e-9) in
    # the torch step.
    assert float((compiled.positions - reference.positions).abs().max()) < 1e-9


def test_steps_the_kernel_leaves_go_to_the_torch_step(monkeypatch):
    """A free slide along a switch of D (a diagonal translation puts every cell on it) is not
    compiled: the torch step takes it, and the push goes on compiled."""
    obj, push = block(24)
    handed = []
    torch_step = rigid_engine._torch_contact_step

    def counted(*args):
        handed.append(args[3])
        return torch_step(*args)

    monkeypatch.setattr(rigid_engine, "_torch_contact_step", counted)
    compiled, reference = compiled_and_torch(monkeypatch, obj, [push],
                                             initial_velocity=[0.0, -0.05, -0.05])
    assert handed
    assert float((compiled.positions - reference.positions).abs().max()) < 1e-9


def test_a_gradient_runs_the_torch_step():
    obj, push = block(10)
    masses = obj.masses.clone().requires_grad_()
    final = simulate(obj, push, masses=masses).final
    final.sum().backward()
    assert masses.grad is not None and bool(torch.isfinite(masses.grad).all())


def test_the_torch_steps_record_does_not_depend_on_the_batch():
    """A locked step's normal impulse is interpolated between the two sides of the bracket's
    jump, whatever else the batch holds (the torch search once took one side's impulse from
    the wrong sample when a round's first sample closed the bracket: push 3 of these, alone
    and among the 16, recorded 0.694 and 0.688 N·s at step 84)."""
    obj, _ = block(88)
    pushes = random_pushes(obj, 16, seed=0, duration=1.0)
    masses = obj.masses.clone().requires_grad_()  # a gradient: the torch step, batched
    together = simulate(obj, pushes, masses=masses).contact
    alone = simulate(obj, pushes[3], masses=masses).contact
    assert int(together.mode[3, 84]) == LOCK
    torch.testing.assert_close(together.normal_impulse[3], alone.normal_impulse, atol=1e-9,
                               rtol=1e-7)


def test_the_kernels_modes_are_the_records():
    from physid.pushing import finger, rigid_kernel

    assert (rigid_kernel.FREE, rigid_kernel.STICK, rigid_kernel.SLIDE, rigid_kernel.LOCK,
            rigid_kernel.COUPLED) == (finger.FREE, finger.STICK, finger.SLIDE, finger.LOCK,
                                      finger.COUPLED)
    assert rigid_kernel.LCP_FREE not in range(len(finger.MODE_NAMES))


def _push_angle_final(steps: int):
    """The final cell positions of block(10)'s push turned by an angle (a tensor), a finger of
    friction 0.2 (it sticks, slides and, from step 16, locks), and the modes of its steps."""
    from dataclasses import replace

    from physid.pushing.engine import Scene, Stepping
    from physid.pushing.finger import FaceGeometry, Finger
    from physid.pushing.pushes import PushBatch

    obj, push = block(10)
    finger = Finger(friction=0.2)
    base = PushBatch.from_pushes(obj, [push], finger=finger)
    faces = FaceGeometry.of(obj, obj.centres)

    def final(angle):
        c, s = torch.cos(angle), torch.sin(angle)
        turn = torch.stack([c, -s, s, c]).reshape(2, 2)
        scene = Scene(obj.centres, obj.masses[None], obj.frictions[None], obj.cell_side,
                      torch.zeros(1, 3, dtype=torch.float64),
                      replace(base, velocity=base.velocity @ turn.T), faces)
        positions, record = rigid_engine.rollout(scene, Stepping(0.01, steps, finger=finger))
        return positions[0, -1], record.mode[0]

    return final


def test_gradient_with_respect_to_the_push_angle():
    """The finger's direction enters the contact, the sliding root and its implicit gradient:
    gradcheck over steps that stick and slide."""
    final = _push_angle_final(15)
    angle = torch.tensor(0.05, dtype=torch.float64, requires_grad=True)
    modes = set(final(angle.detach())[1].tolist())
    assert {STICK, SLIDE} <= modes and LOCK not in modes, modes
    assert torch.autograd.gradcheck(lambda a: final(a)[0], (angle,), eps=1e-7, atol=1e-6,
                                    rtol=1e-4)


@pytest.mark.xfail(strict=True, reason="known: a locked root's implicit gradient with "
                   "respect to the finger's velocity is off by 10-20 % (also before the "
                   "compiled step); masses and frictions are right (test_engines)")
def test_gradient_with_respect_to_the_push_angle_through_locked_steps():
    final = _push_angle_final(30)
    angle = torch.tensor(0.05, dtype=torch.float64, requires_grad=True)
    assert LOCK in set(final(angle.detach())[1].tolist())
    assert torch.autograd.gradcheck(lambda a: final(a)[0], (angle,), eps=1e-7, atol=1e-6,
                                    rtol=1e-4)


def _random_line_problem(rng, k, n_lines):
    """A line solver's problem (``a, lin, c, p, q``) with the lines of a regular polygon."""
    angles = 2 * np.pi * np.arange(n_lines) / n_lines
    dirs = np.stack([np.cos(angles), np.sin(angles)], 1)
    rel = rng.normal(size=(k, 2)) * 0.05
    q = -rel[:, :1] * dirs[:, 1] + rel[:, 1:] * dirs[:, 0]
    p = -(dirs @ (rng.normal(size=2) * 0.1))
    return rng.uniform(1e-3, 1e-2), rng.normal() * 1e-3, rng.uniform(0, 1e-2, k), p, q


@pytest.mark.parametrize("n_lines", [4, 16, 64])
def test_the_line_solve_from_a_guess_is_the_sorted_one(n_lines):
    """The hops from a guess (the walk's and a stick's warm start) find the sorted search's
    piece: the same ω, kink cell, first line and share, from guesses near and far (far ones
    fall back to sorting) and from a guess exactly on the minimum's kink."""
    from physid.pushing import rigid_kernel

    rng = np.random.default_rng(n_lines)
    hops = 0
    for _ in range(300):
        k = int(rng.integers(1, 40))
        a, lin, c, p, q = _random_line_problem(rng, k, n_lines)
        work = rigid_kernel._work(k, n_lines)[3:6]
        sorted_line = np.empty(k, np.int64)
        reference = rigid_kernel._line_solve(a, lin, c, p, q, 1e-10, *work, sorted_line, np.nan)
        for offset in (0.0, 1e-9, 1e-4, 1e-2, 1.0):
            guess = reference[0] + offset * rng.normal()
            line = np.empty(k, np.int64)
            found = rigid_kernel._line_hops(a, lin, c, p, q, 1e-10, guess, line.copy())[0]
            hops += found
            omega, ok, cell, first, share = rigid_kernel._line_solve(
                a, lin, c, p, q, 1e-10, *work, line, guess)
            assert omega == pytest.approx(reference[0], rel=1e-12, abs=1e-15)
            assert (ok, cell) == reference[1:3]
            if cell >= 0:
                assert first == reference[3]
                assert share == pytest.approx(reference[4], abs=1e-9)
                np.testing.assert_array_equal(np.delete(line, cell),
                                              np.delete(sorted_line, cell))
            else:
                np.testing.assert_array_equal(line, sorted_line)
    assert hops > 600  # most guesses were solved by hops, not by the fallback



@pytest.mark.parametrize("n_lines", [4, 16])
def test_the_sorted_search_about_a_cluster_of_kinks_is_the_full_sort(n_lines):
    """Where the hops stop at a point holding several kinks (a cell whose velocity is zero
    there, or two cells at one place), sorting only the kinks about it gives the full sort's
    piece; about a point far from the minimum the window declines and every kink is sorted."""
    from physid.pushing import rigid_kernel

    rng = np.random.default_rng(100 + n_lines)
    windowed = declined = 0
    for trial in range(400):
        k = int(rng.integers(2, 40))
        a, lin, c, p, q = _random_line_problem(rng, k, n_lines)
        cell = int(rng.integers(k))
        omega0 = rng.normal()
        if trial % 2:  # a second cell at the first's place: their kinks coincide
            q[(cell + 1) % k] = q[cell]
        # Cell ``cell``'s velocity zero at ω0 (to ``eps``): all its lines meet there.
        eps = (0.0, 1e-13, 1e-11)[trial % 3]
        p = -q[cell] * omega0 + eps * rng.normal(size=n_lines)
        # ``lin`` puts the minimum at that cluster, g'(ω0−) ≤ 0 ≤ g'(ω0+).
        others = sum(c[m] * q[m, np.argmax(p + q[m] * omega0)] for m in range(k) if m != cell)
        lin = -a * omega0 - others - c[cell] * (q[cell].min() + rng.uniform() * np.ptp(q[cell]))
        work = rigid_kernel._work(k, n_lines)[3:6]
        reference = rigid_kernel._line_sorted(a, lin, c, p, q, *work, np.nan)
        for near in (omega0, omega0 + 1e-9, omega0 + 0.5):
            found = rigid_kernel._line_sorted(a, lin, c, p, q, *work, near)
            assert found[0] == reference[0] and found[2:] == reference[2:]
            assert found[1] == pytest.approx(reference[1], rel=1e-12, abs=1e-15)
            base, count = rigid_kernel._envelope_kinks(c, p, q, *work)
            done = rigid_kernel._line_window(a, lin, base, *work, count, near, n_lines)[0]
            if near == omega0:
                windowed += done
            elif near == omega0 + 0.5:
                declined += not done
    assert windowed > 300 and declined > 300, (windowed, declined)



@pytest.mark.parametrize("n_lines", [4, 16])
def test_the_minimum_where_a_cells_velocity_runs_through_zero_is_the_line_solves(n_lines):
    """Just past the slip where a cell's velocity is zero, the walk takes the minimum among
    that cell's kinks with every other cell's line kept: the full line solve's ω, kink, first
    line and the cell's line, where the minimum lies at that cluster of kinks."""
    from physid.pushing import rigid_kernel

    rng = np.random.default_rng(200 + n_lines)
    angles = 2 * np.pi * np.arange(n_lines) / n_lines
    dirs = np.stack([np.cos(angles), np.sin(angles)], 1)
    kinked = 0
    for trial in range(300):
        k = int(rng.integers(2, 40))
        a, _, c, _, q = _random_line_problem(rng, k, n_lines)
        cell = int(rng.integers(k))
        omega0 = rng.normal()
        # The cell's lines −d_j·(u − ω w) with q_i = D w: all zero at ω0 when u = ω0 w.
        w = dirs.T @ q[cell] * 2 / n_lines
        u = omega0 * w + (1e-13, 1e-12, 1e-11)[trial % 3] * rng.normal(size=2)
        p = -(u[0] * dirs[:, 0] + u[1] * dirs[:, 1])  # as the kernel rounds it
        others = sum(c[m] * q[m, np.argmax(p + q[m] * omega0)] for m in range(k) if m != cell)
        lin = -a * omega0 - others - c[cell] * (q[cell].min() + rng.uniform() * np.ptp(q[cell]))
        line = np.empty(k, np.int64)
        omega, ok, kc, kp, _ = rigid_kernel._line_solve(
            a, lin, c, p, q, 1e-10, *rigid_kernel._work(k, n_lines)[3:6], line, np.nan)
        at_kink, found, first, cell_line = rigid_kernel._zero_velocity(
            a, lin, others, c[cell], q, cell, dirs, *u)
        assert ok
        assert found == pytest.approx(omega, rel=1e-9, abs=1e-12)
        assert at_kink == (kc == cell)
        if at_kink:
            assert first == kp
            kinked += 1
        assert cell_line == line[cell]
    assert kinked > 150


def test_walks_of_thousands_of_pieces_agree_with_the_coupled_lcp(monkeypatch):
    """With 64 directions a slide crosses thousands of pieces of the cone condition; the walk
    solves every step of these pushes (none is coupled) and agrees with the interior-point
    LCP with the finger's rows, which solves the same steps when the classification is
    forced to the fallback (a cap of 1,000 pieces left step 31 of this push to it)."""
    obj = load_object("crimp")
    pushes = random_pushes(obj, 4, seed=7, duration=1.0)[:1]
    with torch.no_grad():
        walked = simulate(obj, pushes, friction_dirs=64, duration=0.33)
    mode = walked.contact.mode
    assert bool(((mode == SLIDE) | (mode == LOCK)).any())
    assert not bool((mode == rigid_engine.COUPLED).any())
    monkeypatch.setattr(rigid_engine, "_compilable", lambda scene: False)
    classify = rigid_engine._classify

    def coupled_slides(c, *args):
        mode, *rest = classify(c, *args)
        return torch.where((mode == SLIDE) | (mode == LOCK), rigid_engine.COUPLED, mode), *rest

    monkeypatch.setattr(rigid_engine, "_classify", coupled_slides)
    with torch.no_grad():
        solved = simulate(obj, pushes, friction_dirs=64, duration=0.33)
    assert bool((solved.contact.mode == rigid_engine.COUPLED).any())
    assert float((walked.positions - solved.positions).abs().max()) < 1e-6


@pytest.mark.parametrize(("name", "friction_dirs", "seed"),
                         [("hammer", 4, 0), ("crimp", 4, 1), ("crimp", 16, 3)])
def test_the_pencil_walk_finds_the_piece_by_piece_walks_roots(monkeypatch, name,
                                                               friction_dirs, seed):
    """Every step of random pushes (slides and locks, from rest and moving), classified with
    the sliding root found by the pencils and piece by piece (the walk that takes O(kL) a
    piece): the same modes, slips, twists and normal impulses, the searches left to the
    piece-by-piece walk included."""
    from physid.pushing import rigid_kernel

    classify = rigid_kernel.classify
    steps = []

    def both(*args):
        pencils = classify(*args, True)
        pieces = classify(*args, False)
        steps.append((pencils, pieces))
        return pieces

    obj = load_object(name)
    pushes = random_pushes(obj, 6, seed=seed, duration=1.0)
    monkeypatch.setattr(rigid_kernel, "classify", both)
    monkeypatch.setattr(rigid_engine, "_compilable", lambda scene: False)
    with torch.no_grad():
        simulate(obj, pushes, friction_dirs=friction_dirs)
    modes = np.concatenate([pieces[0] for _, pieces in steps])
    assert {SLIDE, LOCK} <= set(modes.tolist())
    for pencils, pieces in steps:
        np.testing.assert_array_equal(pencils[0], pieces[0])
        for got, want in zip(pencils[1:], pieces[1:], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(("name", "friction_dirs", "seed"),
                         [("hammer", 4, 0), ("ranch", 4, 2), ("crimp", 16, 3)])
def test_the_walks_piece_at_the_root_is_the_line_solves(monkeypatch, name, friction_dirs,
                                                         seed):
    """A slide or lock the pencils found takes ω, the slopes of the cone condition and of ω,
    the kink cell, its first line and every other cell's line (what the adjoint's tape
    records) from the walk's piece at the root, without a line solve there: each is the line
    solve's at that slip, on every slide and lock of random pushes."""
    from physid.pushing import rigid_kernel

    contexts = []
    classify = rigid_kernel.classify

    def record(*args):
        contexts.append(args)
        return classify(*args)

    obj = load_object(name)
    masses, frictions = draw_truth(obj, seed)
    monkeypatch.setattr(rigid_kernel, "classify", record)
    monkeypatch.setattr(rigid_engine, "_compilable", lambda scene: False)
    with torch.no_grad():
        simulate(obj, random_pushes(obj, 6, seed=seed, duration=1.0), masses=masses,
                 frictions=frictions, friction_dirs=friction_dirs)
    checked = 0
    for mu, m, inertia, bound, arms, cell_vel, contact, dirs, tol in contexts:
        work = rigid_kernel._work(m.shape[1], dirs.shape[0])
        rel, q, p, kinks, jumps, where, line = work[:7]
        for b in range(m.shape[0]):
            walks = np.zeros(2, np.int64)
            ct = contact[b].copy()
            mode, w, vx, vy, _, slip, f_slope, w_slope, kc, kp, _ = rigid_kernel._contact_step(
                mu, m[b], inertia[b], bound[b], arms[b], cell_vel[b], ct, dirs, tol, *work, True,
                walks, ct[5])
            if mode not in (SLIDE, LOCK) or walks[1]:
                continue  # not a slide the pencils found
            walked = line.copy()
            (w_ref, vx_ref, vy_ref, ok, _, _, dp_n, dp_t, dw, _, _, kc_ref,
             kp_ref) = rigid_kernel._move(slip, m[b], inertia[b], bound[b], arms[b], cell_vel[b],
                                          ct, dirs, tol, rel, q, p, kinks, jumps, where, line,
                                          np.nan, False)
            assert ok
            np.testing.assert_allclose([w, vx, vy], [w_ref, vx_ref, vy_ref], rtol=1e-11,
                                       atol=1e-14)
            assert w_slope == pytest.approx(dw, rel=1e-9, abs=1e-12)
            assert min(abs(f_slope - (dp_t - sign * mu * dp_n)) for sign in (1.0, -1.0)) <= (
                1e-9 * (1.0 + abs(f_slope)))
            assert kc == kc_ref
            if kc >= 0:
                assert kp == kp_ref
            np.testing.assert_array_equal(np.delete(walked, kc) if kc >= 0 else walked,
                                          np.delete(line, kc) if kc >= 0 else line)
            checked += 1
    assert checked > 50


def test_the_walks_are_counted():
    """A compiled rollout counts its sliding root searches by walk: the hammer's pushes from
    rest leave their first contacts (cells on the diagonals of D, tied across its lines) to
    the piece-by-piece walk, and the pencils take the rest."""
    obj = load_object("hammer")
    before = dict(rigid_engine.SLIDE_WALKS)
    with torch.no_grad():
        simulate(obj, random_pushes(obj, 4, seed=0, duration=1.0))
    pencils = rigid_engine.SLIDE_WALKS["pencils"] - before.get("pencils", 0)
    pieces = rigid_engine.SLIDE_WALKS["piece by piece"] - before.get("piece by piece", 0)
    assert pencils > 5 * pieces > 0
