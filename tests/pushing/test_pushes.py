"""Reachable pushes: the finger starts clear of the object and reaches the aimed face unhindered.

The approach paths of random pushes are checked independently of ``check_reachable``: discs
sampled densely along each path, with their distances to every cell square computed here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from physid.pushing import OBJECT_NAMES, Push, load_object, random_pushes
from physid.pushing.finger import FINGER, Finger
from physid.pushing.pushes import (
    MAX_PUSH_ANGLE,
    MIN_CLEARANCE,
    check_reachable,
    contact_face,
    finger_start,
)

N_PUSHES = 1000
N_SAMPLES = 200


@pytest.fixture(scope="module")
def crimp():
    return load_object("crimp")


def _distances(points: np.ndarray, obj) -> np.ndarray:
    """Distance (..., k) from points (..., 2) to every cell square of ``obj``."""
    rel = points[..., None, :] - obj.centres.numpy()
    dx = np.clip(np.abs(rel[..., 0]) - obj.cell_side / 2, 0.0, None)
    dy = np.clip(np.abs(rel[..., 1]) - obj.cell_side / 2, 0.0, None)
    return np.hypot(dx, dy)


@pytest.mark.parametrize("name", OBJECT_NAMES)
def test_random_pushes_start_clear_and_reach_their_face_unhindered(name):
    obj = load_object(name)
    pushes = random_pushes(obj, N_PUSHES, seed=11)
    assert len(pushes) == N_PUSHES
    r = FINGER.radius
    starts, touches = [], []
    for q in pushes:
        _, normal = contact_face(obj, q)
        direction = np.asarray(q.direction)
        cosine = float(direction @ normal)
        assert math.acos(min(cosine, 1.0)) <= MAX_PUSH_ANGLE + 1e-9
        start = np.asarray(q.contact) - 2 * r * direction
        np.testing.assert_allclose(finger_start(q), start, atol=1e-15)
        starts.append(start)
        touches.append(np.asarray(q.contact) - r / cosine * direction)
    starts, touches = np.array(starts), np.array(touches)
    assert _distances(starts, obj).min() >= r + MIN_CLEARANCE - 1e-9
    t = np.linspace(0.0, 1.0, N_SAMPLES)[:, None, None]
    for chunk in range(0, N_PUSHES, 100):
        a, b = starts[chunk : chunk + 100], touches[chunk : chunk + 100]
        path = a + t * (b - a)  # (N_SAMPLES, 100, 2)
        assert _distances(path, obj).min() >= r - 1e-9


def test_random_pushes_are_deterministic(crimp):
    first = random_pushes(crimp, 30, seed=3)
    assert first == random_pushes(crimp, 30, seed=3)
    assert first != random_pushes(crimp, 30, seed=4)
    assert random_pushes(crimp, 10, seed=3) == first[:10]


def test_random_pushes_follow_the_finger_and_clearance(crimp):
    small = Finger(radius=0.01)
    for q in random_pushes(crimp, 50, seed=0, finger=small, clearance=0.002):
        assert _distances(finger_start(q, small), crimp).min() >= 0.012 - 1e-9
        check_reachable(crimp, q, small, clearance=0.002)


def test_random_pushes_raise_when_no_push_is_reachable(crimp):
    with pytest.raises(ValueError, match=r"^obj 'crimp' has too few reachable pushes"):
        random_pushes(crimp, 2, seed=0, clearance=1.0)


def _gap(crimp):
    """The corner of the crimp's gap: the head's face in the gap (x) and the lower handle's top
    face (y)."""
    head = crimp.centres[crimp.grid[:, 1] == 5].numpy()
    handle = crimp.centres[(crimp.grid[:, 0] == 4) & (crimp.grid[:, 1] == 6)].numpy()[0]
    a = crimp.cell_side
    return head[0, 0] + a / 2, handle[1] + a / 2


def test_check_reachable_rejects_a_start_inside_the_object(crimp):
    x, y = _gap(crimp)
    # Straight down onto the lower handle: the finger starts 30 mm up, inside the upper handle.
    down = Push((x + 0.03, y), (0.0, -1.0))
    with pytest.raises(ValueError, match=r"^push starts inside or too close to 'crimp'"):
        check_reachable(crimp, down)
    # Straight into the 24 mm gap: the 30 mm finger does not fit.
    into = Push((x, y + 0.012), (-1.0, 0.0))
    with pytest.raises(ValueError, match=r"^push starts inside or too close"):
        check_reachable(crimp, into)


def test_check_reachable_rejects_a_path_across_a_handle(crimp):
    x, y = _gap(crimp)
    finger = Finger(radius=0.008)  # fits the gap and starts clear of both handles
    angle = math.radians(20.0)
    push = Push((x, y + 0.004), (-math.cos(angle), -math.sin(angle)))
    assert _distances(finger_start(push, finger), crimp).min() >= finger.radius
    with pytest.raises(ValueError, match=r"^push approach path crosses cell (\d+)") as error:
        check_reachable(crimp, push, finger, clearance=0.0)
    cell = int(error.value.args[0].split("cell ")[1].split()[0])
    assert crimp.regions[cell] == "h" and crimp.grid[cell, 0] == 4  # the lower handle
    check_reachable(crimp, Push((x, y + 0.008), push.direction), finger, clearance=0.0)


def test_check_reachable_rejects_directions_outside_the_cone(crimp):
    x, y = _gap(crimp)
    left = crimp.centres[:, 0].min().item() - crimp.cell_side / 2
    angle = math.radians(30.0)
    push = Push((left, 0.0), (math.cos(angle), math.sin(angle)))
    with pytest.raises(ValueError, match=r"^push direction .* is 30\.0° from the inward normal"):
        check_reachable(crimp, push)
    check_reachable(crimp, push, max_angle=math.radians(31.0))
