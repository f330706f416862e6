"""Bad trajectories for :class:`TrajectoryLikelihood` fail at once, naming the argument.

Complex values (whose imaginary part would be dropped), bools and strings or objects are not
trajectories: each must raise a TypeError naming ``trajectories`` (or the list entry) before
any work. Real trajectories of any numeric dtype still work.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from physid.inference.chapters import inference_synthetic as ex
from physid.inference.likelihood import TrajectoryLikelihood, check_trajectories


def model():
    return ex.point_mass_model(compiled=False)


def refs() -> np.ndarray:
    return ex.simulate_references(model(), np.array([[1.5, 2.0]]), 8).numpy()


def make(trajectories) -> TrajectoryLikelihood:
    return TrajectoryLikelihood(model(), trajectories, ex.length_limits())


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda r: r + 1e-3j, id="complex-array"),
        pytest.param(lambda r: torch.as_tensor(r + 1e-3j), id="complex-tensor"),
        pytest.param(lambda r: r > 0, id="bool-array"),
        pytest.param(lambda r: torch.as_tensor(r > 0), id="bool-tensor"),
        pytest.param(lambda r: r.astype(str), id="string-array"),
        pytest.param(lambda r: r.astype(object), id="object-array"),
    ],
)
def test_trajectories_of_the_wrong_kind_are_refused(bad):
    with pytest.raises(TypeError, match=r"^trajectories must be an array of real numbers"):
        make(bad(refs()))


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda r: r[0] + 0j, id="complex"),
        pytest.param(lambda r: r[0] > 0, id="bool"),
        pytest.param(lambda r: r[0].astype(str), id="string"),
    ],
)
def test_a_list_entry_of_the_wrong_kind_is_named(bad):
    r = refs()
    with pytest.raises(TypeError, match=r"^trajectories\[1\] must be an array of real numbers"):
        make([r[0], bad(r)])


def test_check_trajectories_names_its_argument():
    with pytest.raises(TypeError, match=r"^references must be an array of real numbers"):
        check_trajectories(refs() + 1j, 4, name="references")


def test_real_trajectories_of_any_numeric_dtype_still_work():
    r = refs()
    expected = make(r).data
    assert torch.equal(make(torch.as_tensor(r)).data, expected)
    assert torch.equal(make([r[0]]).data, expected)
    assert make(r.astype(np.float32)).data.dtype == torch.float64
    assert torch.equal(make((100 * r).astype(np.int64)).data, torch.as_tensor(100 * r).trunc())
