"""Bad input to :class:`physid.sliding.model.SlideData`: times off the step grid are named."""

from __future__ import annotations

import re

import numpy as np
import pytest

from physid.sliding import model as sliding

DT = sliding.BULLET_DT


def data(t, step_dt: float = DT, sample_every: int = 4) -> sliding.SlideData:
    return sliding.SlideData(t, np.zeros(len(t)), 2.0, step_dt, sample_every, 0.3)


def grid(n: int = 10, step_dt: float = DT, sample_every: int = 4) -> np.ndarray:
    return step_dt * sample_every * np.arange(1, n + 1)


@pytest.mark.parametrize(
    "t, index",
    [
        pytest.param(grid() + 0.5 * DT, 0, id="half-a-step-late"),
        pytest.param(grid(step_dt=0.01), 0, id="another-step"),
        pytest.param(grid(sample_every=2), 0, id="another-sample-interval"),
        pytest.param(grid(11)[1:], 0, id="first-sample-missing"),
        pytest.param(np.delete(grid(11), 4), 4, id="a-gap"),
        pytest.param(grid()[::-1].copy(), 0, id="reversed"),
    ],
)
def test_times_off_the_grid_are_refused(t, index):
    with pytest.raises(
        ValueError,
        match=rf"^t must lie on the sampling grid step_dt \* sample_every .* t\[{index}\]",
    ):
        data(t)


def test_the_error_gives_the_time_and_the_grid_time():
    t = grid()
    t[3] += DT
    message = f"t[3] = {float(t[3])!r}, expected {float(grid()[3])!r}"
    with pytest.raises(ValueError, match=re.escape(message)):
        data(t)


def test_times_on_the_grid_still_work_to_a_rounding():
    assert np.array_equal(data(grid()).t, grid())
    rounded = np.round(grid(), 6)  # time stamps written with six decimals
    assert data(rounded).n_steps == 40
    assert data(grid(step_dt=0.01), step_dt=0.01).n_steps == 40
