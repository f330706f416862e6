"""Bad input to every public entry point of the sliding-box tutorial fails at the entry.

Each case calls one function with valid arguments except one, and expects a ValueError (a
bad value) or a TypeError (a value of the wrong kind) whose message starts with the name of
that argument. pybullet never runs here: every check happens before any work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from physid.sliding import model as sliding
from physid.sliding.chapters import tutorial_sliding_box_figures as sliding_figures

F64 = torch.float64


def _data() -> sliding.SlideData:
    x = sliding.simulate_slide(torch.tensor(0.3, dtype=F64), 2.0, 240, sliding.BULLET_DT)
    return sliding.SlideData(
        t=sliding.BULLET_DT * 4 * np.arange(1, 61),
        x=x[3::4].numpy(),
        v0=2.0,
        step_dt=sliding.BULLET_DT,
        sample_every=4,
        mu_effective=0.3,
    )


DATA = _data()
FIT = sliding.FitResult(mu=0.3, mus=np.array([0.1, 0.3]), losses=np.array([1.0, 0.1]))
LANDSCAPE = sliding.loss_landscape(DATA, 0.1, 0.5, 5)
MU = torch.tensor([0.2, 0.3], dtype=F64)
ZERO, TWO = torch.zeros(2, dtype=F64), torch.full((2,), 2.0, dtype=F64)

NAN, INF = math.nan, math.inf
#: Bad values of each kind of argument, with the error each must raise.
BAD: dict[str, list[tuple[Any, type[Exception]]]] = {
    "positive": [
        (NAN, ValueError),
        (INF, ValueError),
        (-INF, ValueError),
        (-1.0, ValueError),
        (0.0, ValueError),
        (np.float32(-2.0), ValueError),
        (torch.tensor(NAN), ValueError),
        ("1.0", TypeError),
        (None, TypeError),
        (True, TypeError),
        (torch.tensor([1.0, 2.0]), TypeError),
    ],
    "nonnegative": [
        (NAN, ValueError),
        (INF, ValueError),
        (-INF, ValueError),
        (-0.5, ValueError),
        (np.float64(-1.0), ValueError),
        ("0.5", TypeError),
        (None, TypeError),
    ],
    "count": [
        (0, ValueError),
        (-3, ValueError),
        (np.int64(-1), ValueError),
        (2.0, TypeError),
        (NAN, TypeError),
        ("4", TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
    "count0": [(-1, ValueError), (1.5, TypeError), (None, TypeError)],
    "seed": [(None, ValueError), (-1, ValueError), (1.5, TypeError), ("0", TypeError)],
    "mu_tensor": [
        (torch.tensor([NAN, 0.3], dtype=F64), ValueError),
        (torch.tensor([INF], dtype=F64), ValueError),
        (torch.tensor([-INF], dtype=F64), ValueError),
        (torch.tensor([-0.1], dtype=F64), ValueError),
        (torch.tensor([0.3], dtype=torch.float32), TypeError),
        (torch.tensor([1, 2]), TypeError),
        (0.3, TypeError),
        (np.array([0.3]), TypeError),
    ],
    "state_tensor": [
        (torch.tensor([NAN, 0.0], dtype=F64), ValueError),
        (torch.tensor([INF, 0.0], dtype=F64), ValueError),
        (torch.zeros(2, dtype=torch.float32), TypeError),
        (0.0, TypeError),
    ],
    "dts": [
        (np.array([1e-3, NAN]), ValueError),
        (np.array([1e-3, INF]), ValueError),
        (np.array([1e-3, -1e-3]), ValueError),
        (np.array([0.0, 1e-3]), ValueError),
        (np.ones((2, 2)) * 1e-3, ValueError),
        (["a", "b"], TypeError),
    ],
    "half_extents": [
        ((0.1, 0.1), ValueError),
        ((0.1, 0.1, 0.01, 0.1), ValueError),
        ((0.1, 0.0, 0.01), ValueError),
        ((0.1, -0.1, 0.01), ValueError),
        ((0.1, NAN, 0.01), ValueError),
        ((0.1, INF, 0.01), ValueError),
        (("a", 0.1, 0.1), TypeError),
    ],
    "data": [(None, TypeError), ({"x": [0.0]}, TypeError), (np.zeros(3), TypeError)],
    "flag": [(1, TypeError), ("yes", TypeError), (None, TypeError)],
    "rel_step": [(0.0, ValueError), (-1e-6, ValueError), (0.5, ValueError), (NAN, ValueError)],
}

#: (function, valid keyword arguments, argument under test, kind of argument).
ENTRY_POINTS: list[tuple[Callable[..., Any], dict[str, Any], str, str]] = []


def entry(function: Callable[..., Any], valid: dict[str, Any], kinds: dict[str, str]) -> None:
    for argument, kind in kinds.items():
        ENTRY_POINTS.append((function, valid, argument, kind))


entry(
    sliding.stopping_distance,
    {"v0": 2.0, "mu": 0.3, "g": 9.81},
    {"v0": "positive", "mu": "positive", "g": "positive"},
)
entry(
    sliding.slide_step,
    {"x": ZERO, "v": TWO, "mu": MU, "dt": 0.01, "g": 9.81},
    {"x": "state_tensor", "v": "state_tensor", "mu": "mu_tensor", "dt": "positive",
     "g": "positive"},
)
entry(
    sliding.simulate_slide,
    {"mu": MU, "v0": 2.0, "n_steps": 5, "dt": 0.01, "g": 9.81},
    {"mu": "mu_tensor", "v0": "positive", "n_steps": "count", "dt": "positive",
     "g": "positive"},
)
entry(sliding.predict, {"mu": MU, "data": DATA}, {"mu": "mu_tensor", "data": "data"})
entry(sliding.trajectory_loss, {"mu": MU, "data": DATA}, {"mu": "mu_tensor", "data": "data"})
entry(
    sliding.bullet_slide,
    {},
    {"mu_box": "nonnegative", "mu_plane": "nonnegative", "v0": "positive",
     "duration": "positive", "half_extents": "half_extents", "mass": "positive",
     "sample_every": "count", "settle_steps": "count0", "damping": "nonnegative"},
)
entry(
    sliding.add_noise,
    {"data": DATA, "sigma": 1e-3, "seed": 0},
    {"data": "data", "sigma": "nonnegative", "seed": "seed"},
)
entry(
    sliding.stopping_distance_error,
    {"v0": 2.0, "mu": 0.3, "dts": np.array([1e-3, 1e-2]), "g": 9.81},
    {"v0": "positive", "mu": "positive", "dts": "dts", "g": "positive"},
)
entry(
    sliding.fit_friction,
    {"data": DATA, "mu_init": 0.1, "iterations": 2, "lr": 0.05, "progress": False},
    {"data": "data", "mu_init": "positive", "iterations": "count", "lr": "positive",
     "progress": "flag"},
)
entry(
    sliding.loss_landscape,
    {"data": DATA, "mu_min": 0.1, "mu_max": 0.5, "points": 3, "rel_step": 1e-6},
    {"data": "data", "mu_min": "positive", "mu_max": "positive", "points": "count",
     "rel_step": "rel_step"},
)
entry(
    sliding.bullet_gradient_check,
    {"data": DATA, "mu_min": 0.1, "mu_max": 0.5, "points": 3, "rel_step": 1e-3},
    {"data": "data", "mu_min": "positive", "mu_max": "positive", "points": "count",
     "rel_step": "rel_step"},
)
entry(
    sliding.SlideData,
    {"t": DATA.t, "x": DATA.x, "v0": 2.0, "step_dt": sliding.BULLET_DT, "sample_every": 4,
     "mu_effective": 0.3},
    {"v0": "positive", "step_dt": "positive", "sample_every": "count",
     "mu_effective": "nonnegative"},
)
entry(
    sliding_figures.plot_trajectories,
    {"data": DATA, "mus": {"a": 0.3}},
    {"data": "data"},
)
entry(
    sliding_figures.plot_convergence,
    {"v0": 2.0, "dts": np.array([1e-3, 1e-2]), "errors": np.array([1e-3, 1e-2])},
    {"v0": "positive", "dts": "dts"},
)
entry(sliding_figures.plot_fit, {"fit": FIT, "mu_true": 0.3}, {"mu_true": "positive"})
entry(
    sliding_figures.plot_landscape,
    {"landscape": LANDSCAPE, "mu_true": 0.3, "mu_fit": 0.3},
    {"mu_true": "positive", "mu_fit": "positive"},
)
entry(
    sliding_figures.slide_explorer,
    {"data": DATA, "mu": 0.1, "mu_max": 1.0},
    {"data": "data", "mu": "positive", "mu_max": "positive"},
)

CASES = [
    pytest.param(
        function, valid, argument, value, error,
        id=f"{function.__name__}-{argument}-{index}",
    )
    for function, valid, argument, kind in ENTRY_POINTS
    for index, (value, error) in enumerate(BAD[kind])
]


@pytest.mark.parametrize("function, valid, argument, value, error", CASES)
def test_bad_argument_is_refused_and_named(function, valid, argument, value, error):
    kwargs = {**valid, argument: value}
    with pytest.raises(error, match=rf"^{re.escape(argument)}\b"):
        function(**kwargs)
    plt.close("all")


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: sliding.SIZES["huge"], ValueError, "SCALE must be one of"),
        (lambda: sliding.bullet_slide(mu_box=5.0, mu_plane=3.0), ValueError, "mu_box \\* mu_plane"),
        (lambda: sliding.bullet_slide(duration=1e-4), ValueError, "duration must cover"),
        (lambda: sliding.loss_landscape(DATA, 0.5, 0.1, 10), ValueError, "mu_max must exceed"),
        (lambda: sliding.loss_landscape(DATA, 0.1, 0.5, 1), ValueError, "points must be >= 2"),
        (
            lambda: sliding.bullet_gradient_check(DATA, 0.1, 20.0, 3),
            ValueError,
            "mu_max must be <= 10",
        ),
        (
            lambda: sliding.bullet_gradient_check(
                sliding.SlideData(0.04 * np.arange(1, 61), DATA.x, 2.0, 0.01, 4, 0.3), 0.1, 0.5, 3
            ),
            ValueError,
            "data must be stepped at Bullet's",
        ),
        (
            lambda: sliding.slide_step(torch.zeros(3, dtype=F64), TWO, MU, 0.01),
            ValueError,
            "x, v and mu must broadcast",
        ),
        (
            lambda: sliding.slide_step(ZERO, torch.full((2,), -1.0, dtype=F64), MU, 0.01),
            ValueError,
            "v must be >= 0",
        ),
        (
            lambda: sliding.SlideData(DATA.t, DATA.x[:-1], 2.0, 0.01, 4, 0.3),
            ValueError,
            "x must have shape",
        ),
        (
            lambda: sliding.SlideData(np.array([]), np.array([]), 2.0, 0.01, 4, 0.3),
            ValueError,
            "t must hold at least one",
        ),
        (
            lambda: sliding.SlideData(-DATA.t, DATA.x, 2.0, 0.01, 4, 0.3),
            ValueError,
            "t must be > 0",
        ),
        (
            lambda: sliding_figures.plot_trajectories(DATA, {"a": math.nan}),
            ValueError,
            "mus\\['a'\\] must be finite",
        ),
        (lambda: sliding_figures.plot_trajectories(DATA, [0.3]), TypeError, "mus must be"),
        (
            lambda: sliding_figures.plot_trajectories(DATA, {"a": 0.3}, ax="left"),
            TypeError,
            "ax must be",
        ),
        (
            lambda: sliding_figures.plot_convergence(2.0, np.ones(2), np.ones(3)),
            ValueError,
            "errors must have shape",
        ),
        (lambda: sliding_figures.plot_fit(None, 0.3), TypeError, "fit must be"),
        (
            lambda: sliding_figures.plot_landscape(LANDSCAPE, 0.3, 0.3, bullet=1.0),
            TypeError,
            "bullet must be",
        ),
        (
            lambda: sliding_figures.slide_explorer(DATA, mu=2.0, mu_max=1.0),
            ValueError,
            "mu must be <= 1",
        ),
        (
            lambda: sliding_figures.slide_explorer(DATA, mu=0.01),
            ValueError,
            "mu must be >= 0.02",
        ),
    ],
)
def test_inconsistent_arguments_are_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
    plt.close("all")
