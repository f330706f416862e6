"""Bad input to every public entry point of physid.pushing fails at once, naming the argument.

Each case calls one entry point with one bad argument (NaN, ±inf, negative, zero, wrong shape,
wrong dtype or kind, out of range) and expects a ValueError or TypeError whose message starts
with the argument's name. Numpy and torch scalars are accepted where a number is meant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.pushing import (
    Push,
    from_mask,
    load_object,
    random_pushes,
    rectangle,
    simulate,
    simulate_bullet,
    solve_lcp,
)
from physid.pushing.bullet import create_object
from physid.pushing.chapters import pushing_lcp as ex
from physid.pushing.chapters.pushing_lcp_figures import boundary_push, plot_push
from physid.pushing.engine import Engine, Scene, Stepping
from physid.pushing.finger import FaceGeometry, Finger
from physid.pushing.pushes import PushBatch, check_reachable, contact_face, finger_start
from physid.pushing.simulate import FORMULATIONS, cell_position_error, sample_indices

pytestmark = pytest.mark.usefixtures("one_torch_thread")

F64 = torch.float64
NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def box():
    return rectangle(2, 3, 0.02, 0.01, 0.4)


@pytest.fixture(scope="module")
def push():
    return Push((0.0, -0.02), (0.0, 1.0), duration=0.05)


def raises(error, argument, call, /, *args, **kwargs):
    with pytest.raises(error, match=rf"^{argument}\b"):
        call(*args, **kwargs)


# --- objects -----------------------------------------------------------------------------------

MASK = [[1, 1], [1, 0]]


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"cell_side": NAN}, "cell_side", ValueError),
        ({"cell_side": INF}, "cell_side", ValueError),
        ({"cell_side": -0.1}, "cell_side", ValueError),
        ({"cell_side": 0.0}, "cell_side", ValueError),
        ({"cell_side": "1"}, "cell_side", TypeError),
        ({"cell_side": True}, "cell_side", TypeError),
        ({"masses": NAN}, "masses", ValueError),
        ({"masses": -INF}, "masses", ValueError),
        ({"masses": 0.0}, "masses", ValueError),
        ({"masses": [1.0, 2.0]}, "masses", ValueError),
        ({"masses": torch.ones(3, dtype=torch.float32)}, "masses", TypeError),
        ({"masses": "heavy"}, "masses", TypeError),
        ({"frictions": -0.1}, "frictions", ValueError),
        ({"frictions": INF}, "frictions", ValueError),
        ({"frictions": np.ones((3, 1))}, "frictions", ValueError),
        ({"mask": [[NAN, 1.0]]}, "mask", ValueError),
        ({"mask": [1, 1, 1]}, "mask", ValueError),
        ({"mask": [[0, 0], [0, 0]]}, "mask", ValueError),
        ({"mask": [[1, 0], [0, 1]]}, "mask", ValueError),
        ({"name": 3}, "name", TypeError),
        ({"regions": ["a"]}, "regions", ValueError),
    ],
)
def test_from_mask_rejects(kwargs, name, error):
    args = {"mask": MASK, "cell_side": 0.1, "masses": 1.0, "frictions": 0.5}
    raises(error, name, from_mask, **{**args, **kwargs})


@pytest.mark.parametrize("cell_side", [np.float32(0.02), np.float64(0.02), torch.tensor(0.02), 2])
def test_cell_side_accepts_numpy_and_torch_scalars(cell_side):
    obj = from_mask(MASK, cell_side, 1.0, 0.5)
    assert isinstance(obj.cell_side, float) and obj.cell_side == pytest.approx(float(cell_side))


@pytest.mark.parametrize(
    ("args", "name", "error"),
    [((0, 2), "rows", ValueError), ((2, 2.0), "cols", TypeError), ((2, -1), "cols", ValueError)],
)
def test_rectangle_rejects(args, name, error):
    raises(error, name, rectangle, *args, 0.02, 0.01, 0.4)


def test_load_object_rejects_unknown_names():
    raises(ValueError, "name", load_object, "spanner")
    raises(TypeError, "name", load_object, None)


def test_with_params_rejects(box):
    raises(ValueError, "masses", box.with_params, masses=torch.full((6,), NAN, dtype=F64))
    raises(ValueError, "frictions", box.with_params, frictions=-torch.ones(6, dtype=F64))


# --- pushes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"contact": (NAN, 0.0)}, "contact", ValueError),
        ({"contact": (0.0,)}, "contact", ValueError),
        ({"contact": (0.0, INF)}, "contact", ValueError),
        ({"direction": (1.0, 1.0)}, "direction", ValueError),
        ({"direction": (NAN, 1.0)}, "direction", ValueError),
        ({"speed": 0.0}, "speed", ValueError),
        ({"speed": -0.2}, "speed", ValueError),
        ({"speed": NAN}, "speed", ValueError),
        ({"speed": "fast"}, "speed", TypeError),
        ({"duration": INF}, "duration", ValueError),
        ({"duration": 0}, "duration", ValueError),
    ],
)
def test_push_rejects(kwargs, name, error):
    raises(error, name, Push, **{"contact": (0.0, 0.0), "direction": (0.0, 1.0), **kwargs})


def test_push_accepts_numpy_and_torch_scalars():
    q = Push(np.array([0.0, -0.02]), (np.float32(0.0), 1), speed=np.float32(0.1),
             duration=torch.tensor(0.5))
    assert q.speed == pytest.approx(0.1) and q.duration == 0.5


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"n": 0}, "n", ValueError),
        ({"n": 2.0}, "n", TypeError),
        ({"seed": None}, "seed", ValueError),
        ({"seed": -1}, "seed", ValueError),
        ({"seed": 1.5}, "seed", TypeError),
        ({"speed": NAN}, "speed", ValueError),
        ({"duration": -1.0}, "duration", ValueError),
        ({"max_angle": math.pi / 2}, "max_angle", ValueError),
        ({"max_angle": -0.1}, "max_angle", ValueError),
        ({"obj": "hammer"}, "obj", TypeError),
    ],
)
def test_random_pushes_rejects(box, kwargs, name, error):
    args = {"obj": box, "n": 2, "seed": 0}
    raises(error, name, random_pushes, **{**args, **kwargs})


def test_random_pushes_accept_numpy_ints(box):
    assert random_pushes(box, np.int64(3), seed=np.int32(4)) == random_pushes(box, 3, seed=4)


def test_contact_face_and_push_batch_reject(box, push):
    raises(TypeError, "push", contact_face, box, "push")
    raises(TypeError, "obj", contact_face, None, push)
    raises(ValueError, "push.contact", contact_face, box, Push((0.0, -0.5), (0.0, 1.0)))
    raises(ValueError, "pushes", PushBatch.from_pushes, box, [])
    raises(TypeError, "pushes", PushBatch.from_pushes, box, [push, "push"])


# --- the finger and reachable pushes -----------------------------------------------------------

#: A U of five cells (x in [−0.03, 0.03], y in [−0.018, 0.022]) around a 20 mm gap.
U_SHAPE = from_mask([[1, 0, 1], [1, 1, 1]], 0.02, 0.01, 0.4)
#: Aimed across the gap at the left arm: the finger starts inside the right arm.
STARTS_INSIDE = Push((-0.01, 0.012), (-1.0, 0.0), duration=0.05)
#: 30° from the inward normal of the box's bottom face: outside the 20° cone.
TOO_STEEP = Push((0.0, -0.02), (0.5, math.sqrt(0.75)), duration=0.05)


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"radius": 0.0}, "finger.radius", ValueError),
        ({"radius": -0.015}, "finger.radius", ValueError),
        ({"radius": NAN}, "finger.radius", ValueError),
        ({"radius": INF}, "finger.radius", ValueError),
        ({"radius": "0.015"}, "finger.radius", TypeError),
        ({"friction": -0.1}, "finger.friction", ValueError),
        ({"friction": NAN}, "finger.friction", ValueError),
        ({"friction": None}, "finger.friction", TypeError),
    ],
)
def test_finger_rejects(kwargs, name, error):
    raises(error, name, Finger, **kwargs)


def test_finger_accepts_numpy_and_torch_scalars():
    finger = Finger(radius=np.float32(0.01), friction=torch.tensor(0.5))
    assert finger.radius == pytest.approx(0.01) and finger.friction == 0.5


@pytest.mark.parametrize("bad", [STARTS_INSIDE, TOO_STEEP])
def test_unreachable_pushes_are_rejected_naming_push(box, push, bad):
    obj = U_SHAPE if bad is STARTS_INSIDE else box
    raises(ValueError, "push", check_reachable, obj, bad)
    raises(ValueError, "push", PushBatch.from_pushes, obj, [bad])
    raises(ValueError, "push", simulate_bullet, obj, bad, [0.05])
    if obj is box:
        raises(ValueError, "push", PushBatch.from_pushes, box, [push, bad])
        raises(ValueError, "push", simulate_bullet, box, [push, bad], [0.05])


def test_reachability_arguments_are_checked(box, push):
    raises(TypeError, "obj", check_reachable, "box", push)
    raises(TypeError, "push", check_reachable, box, "push")
    raises(TypeError, "finger", check_reachable, box, push, finger=0.015)
    raises(ValueError, "clearance", check_reachable, box, push, clearance=-0.001)
    raises(ValueError, "clearance", check_reachable, box, push, clearance=NAN)
    raises(ValueError, "max_angle", check_reachable, box, push, max_angle=math.pi / 2)
    raises(TypeError, "push", finger_start, None)
    raises(TypeError, "finger", finger_start, push, "finger")
    raises(TypeError, "finger", PushBatch.from_pushes, box, [push], finger=None)


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"finger": 0.015}, "finger", TypeError),
        ({"clearance": -0.001}, "clearance", ValueError),
        ({"clearance": INF}, "clearance", ValueError),
        ({"clearance": 0.02}, "obj", ValueError),  # never 2 cm clear: 2r cos θ < r + 2 cm
    ],
)
def test_random_pushes_reject_bad_fingers_and_clearances(box, kwargs, name, error):
    raises(error, name, random_pushes, box, 2, seed=0, **kwargs)


# --- simulate ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"formulation": "euler"}, "formulation", ValueError),
        ({"dt": 0.0}, "dt", ValueError),
        ({"dt": NAN}, "dt", ValueError),
        ({"dt": -0.01}, "dt", ValueError),
        ({"gravity": -9.81}, "gravity", ValueError),
        ({"gravity": NAN}, "gravity", ValueError),
        ({"gravity": 0.0}, "gravity", ValueError),
        ({"tol": 0.0}, "tol", ValueError),
        ({"tol": INF}, "tol", ValueError),
        ({"friction_dirs": 2}, "friction_dirs", ValueError),
        ({"friction_dirs": 4.0}, "friction_dirs", TypeError),
        ({"masses": torch.full((6,), NAN, dtype=F64)}, "masses", ValueError),
        ({"masses": -torch.ones(6, dtype=F64)}, "masses", ValueError),
        ({"masses": torch.ones(5, dtype=F64)}, "masses", ValueError),
        ({"masses": torch.ones(6, dtype=torch.float32)}, "masses", TypeError),
        ({"frictions": torch.full((6,), INF, dtype=F64)}, "frictions", ValueError),
        ({"frictions": -torch.ones(6, dtype=F64)}, "frictions", ValueError),
        ({"frictions": torch.ones(2, 6, dtype=F64)}, "frictions", ValueError),
        ({"sample_times": [0.0, NAN]}, "sample_times", ValueError),
        ({"sample_times": [INF]}, "sample_times", ValueError),
        ({"sample_times": [-0.01]}, "sample_times", ValueError),
        ({"sample_times": [0.015]}, "sample_times", ValueError),
        ({"sample_times": []}, "sample_times", ValueError),
        ({"initial_velocity": [0.0, NAN, 0.0]}, "initial_velocity", ValueError),
        ({"initial_velocity": [0.0, 1.0]}, "initial_velocity", ValueError),
        ({"initial_velocity": torch.zeros(3)}, "initial_velocity", TypeError),
        ({"duration": 0.035}, "duration", ValueError),
        ({"progress": None}, "progress", TypeError),
    ],
)
def test_simulate_rejects(box, push, kwargs, name, error):
    raises(error, name, simulate, box, push, **kwargs)


def test_simulate_rejects_bad_objects_and_pushes(box, push):
    raises(TypeError, "obj", simulate, "box", push)
    raises(TypeError, "push", simulate, box, 3)
    raises(ValueError, "duration", simulate, box, None)
    raises(ValueError, "duration", simulate, box, None, duration=-1.0)


def test_simulate_accepts_numpy_and_torch_scalars(box, push):
    traj = simulate(box, push, dt=np.float64(0.01), gravity=np.float32(9.81),
                    tol=torch.tensor(1e-10), friction_dirs=np.int64(4))
    assert traj.positions.shape == (6, 6, 2)


def test_sample_indices_names_sample_times():
    raises(ValueError, "sample_times", sample_indices, [NAN], 0.01, 1.0)
    raises(ValueError, "step", sample_indices, [0.0], 0.0, 1.0)


def test_cell_position_error_rejects_empty_objects_and_nan():
    empty = torch.zeros(3, 0, 2, dtype=F64)
    raises(ValueError, "predicted", cell_position_error, empty, empty)
    good = torch.zeros(4, 2, dtype=F64)
    raises(ValueError, "reference", cell_position_error, good, torch.full((4, 2), NAN))
    raises(ValueError, "predicted", cell_position_error, torch.zeros(4, 3), good)
    raises(TypeError, "predicted", cell_position_error, np.zeros((4, 2)), good)


# --- the engines' rollouts ---------------------------------------------------------------------


def _scene_and_stepping(box, push):
    scene = {
        "centres": box.centres, "masses": box.masses[None], "frictions": box.frictions[None],
        "cell_side": box.cell_side, "initial_velocity": torch.zeros(1, 3, dtype=F64),
        "pushes": PushBatch.from_pushes(box, [push]), "faces": FaceGeometry.of(box, box.centres),
    }
    return scene, {"dt": 0.01, "n_steps": 2}


def test_every_engine_satisfies_the_contract():
    for name, spec in FORMULATIONS.items():
        assert isinstance(spec.engine, Engine), name
    assert set(FORMULATIONS) == {"rigid", "lcp"}


@pytest.mark.parametrize("formulation", ["lcp", "rigid"])
@pytest.mark.parametrize(
    ("change", "name", "error"),
    [
        (lambda s, k: (s, {**k, "dt": 0.0}), "dt", ValueError),
        (lambda s, k: (s, {**k, "gravity": -1.0}), "gravity", ValueError),
        (lambda s, k: (s, {**k, "tol": 0.0}), "tol", ValueError),
        (lambda s, k: (s, {**k, "n_steps": -1}), "n_steps", ValueError),
        (lambda s, k: (s, {**k, "n_steps": 2.0}), "n_steps", TypeError),
        (lambda s, k: (s, {**k, "friction_dirs": 1}), "friction_dirs", ValueError),
        (lambda s, k: (s, {**k, "finger": "disc"}), "finger", TypeError),
        (lambda s, k: ({**s, "cell_side": NAN}, k), "cell_side", ValueError),
        (lambda s, k: ({**s, "centres": s["centres"].float()}, k), "centres", TypeError),
        (lambda s, k: ({**s, "masses": -s["masses"]}, k), "masses", ValueError),
        (lambda s, k: ({**s, "frictions": s["frictions"][:, :3]}, k), "frictions", ValueError),
        (lambda s, k: ({**s, "frictions": s["frictions"] * NAN}, k), "frictions", ValueError),
        (lambda s, k: ({**s, "initial_velocity": s["initial_velocity"] + INF}, k),
         "initial_velocity", ValueError),
        (lambda s, k: ({**s, "pushes": "push"}, k), "pushes", TypeError),
        (lambda s, k: ({**s, "faces": None}, k), "faces", TypeError),
    ],
)
def test_engine_rollouts_reject(box, push, formulation, change, name, error):
    scene, stepping = change(*_scene_and_stepping(box, push))
    engine = FORMULATIONS[formulation]
    raises(error, name, lambda: engine.rollout(Scene(**scene), Stepping(**stepping)))


def test_solve_lcp_rejects_tol_zero_and_nan():
    Q, G = torch.eye(2, dtype=F64)[None], -torch.eye(2, dtype=F64)[None]
    p, h = torch.zeros(1, 2, dtype=F64), torch.zeros(1, 2, dtype=F64)
    raises(ValueError, "tol", solve_lcp, Q, p, G, h, tol=0.0)
    raises(ValueError, "p", solve_lcp, Q, p * NAN, G, h)
    raises(TypeError, "G", solve_lcp, Q, p, G.float(), h)


# --- pybullet ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "name", "error"),
    [
        ({"time_step": 0.0}, "time_step", ValueError),
        ({"time_step": NAN}, "time_step", ValueError),
        ({"settle_steps": -1}, "settle_steps", ValueError),
        ({"settle_steps": 1.5}, "settle_steps", TypeError),
        ({"gravity": -9.81}, "gravity", ValueError),
        ({"gravity": NAN}, "gravity", ValueError),
        ({"frictions": torch.full((6,), 50.0, dtype=F64)}, "frictions", ValueError),
        ({"frictions": torch.full((6,), NAN, dtype=F64)}, "frictions", ValueError),
        ({"masses": torch.zeros(6, dtype=F64)}, "masses", ValueError),
        ({"masses": torch.ones(4, dtype=F64)}, "masses", ValueError),
        ({"sample_times": [NAN]}, "sample_times", ValueError),
        ({"sample_times": [0.01]}, "sample_times", ValueError),
        ({"push": []}, "push", ValueError),
        ({"push": "push"}, "push", TypeError),
        ({"push": STARTS_INSIDE}, "push", ValueError),
        ({"finger": 0.015}, "finger", TypeError),
        ({"finger": Finger(friction=10.5)}, "finger.friction", ValueError),
    ],
)
def test_simulate_bullet_rejects_before_starting(box, push, kwargs, name, error):
    args = {"obj": box, "push": push, "sample_times": [0.05]}
    raises(error, name, simulate_bullet, **{**args, **kwargs})


def test_create_object_rejects_frictions_above_bullets_cap(box):
    too_high = torch.full((6,), 11.0, dtype=F64)
    raises(ValueError, "frictions", create_object, 0, box, frictions=too_high)


# --- the chapter's drivers and figures ---------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "name", "error"),
    [
        (lambda: ex.sample_times(NAN), "duration", ValueError),
        (lambda: ex.sliding_check(v0=-1.0), "v0", ValueError),
        (lambda: ex.sliding_check(mu=0.0), "mu", ValueError),
        (lambda: ex.sliding_check(dt=INF), "dt", ValueError),
        (lambda: ex.sliding_check(dirs=(2,)), "dirs", ValueError),
        (lambda: ex.sliding_check(n_angles=1), "n_angles", ValueError),
        (lambda: ex.push_turns(offset=NAN), "offset", ValueError),
        (lambda: ex.push_turns(offset=1.0), "offset", ValueError),
        (lambda: ex.push_turns(duration=0.0), "duration", ValueError),
        (lambda: ex.formulation_gap("hammer", []), "obj", TypeError),
        (lambda: ex.formulation_gap(rectangle(1, 1, 0.02, 0.01, 0.4), []), "pushes", ValueError),
        (lambda: ex.bullet_gap(("hammer",), 0, 0.5, seed=0), "n_pushes", ValueError),
        (lambda: ex.bullet_gap(("hammer",), 1, 0.5, seed=None), "seed", ValueError),
        (lambda: ex.bullet_gap(("spanner",), 1, 0.5, seed=0), "names", ValueError),
        (lambda: ex.bullet_gap((), 1, 0.5, seed=0), "names", ValueError),
        (lambda: ex.bullet_gap(("hammer",), 1, -0.5, seed=0), "duration", ValueError),
        (lambda: ex.bullet_gap(("hammer",), 1, 0.5, seed=0, n_jobs=0), "n_jobs", ValueError),
    ],
)
def test_experiment_drivers_reject(call, name, error):
    raises(error, name, call)


def test_figure_helpers_reject(box, push):
    raises(ValueError, "position", boundary_push, box, 1.0, 0.0)
    raises(ValueError, "angle", boundary_push, box, 0.5, NAN)
    raises(ValueError, "friction_scale", plot_push, box, push, friction_scale=-1.0)
