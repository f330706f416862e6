"""The shaken-box experiment: phases I and II at quick sizes, the mode shares, bad input."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from physid.inference.box import PHASE1_LIMITS, PHASE2_LIMITS, TRUE_BOX, TRUE_WEIGHTS
from physid.inference.chapters import inference_real_box as sb

QUICK = sb.SIZES["quick"]
TRUTH = np.array([TRUE_WEIGHTS[n] for n in PHASE2_LIMITS])


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    monkeypatch.setenv("PHYSID_CACHE", "off")


def test_problems_estimate_the_papers_parameters():
    one, two = sb.box_problem(1), sb.box_problem(2)
    assert one.limits.names == tuple(PHASE1_LIMITS)
    assert two.limits.names == tuple(PHASE2_LIMITS)
    assert one.recording.weights is None and two.recording.weights == TRUE_WEIGHTS
    target = two.target(QUICK.windows, "likelihood")
    assert target.dim == 4 + 4 * (QUICK.windows - 1)
    # the observation scale is one spread for all twelve coordinates
    assert len(set(target.observation_std.tolist())) == 1


def test_the_true_weights_and_their_swap_fit_equally_and_best():
    target = sb.box_problem(2).target()
    z = target.limits.normalise(np.stack((TRUTH, TRUTH[[2, 3, 0, 1]], np.zeros(4))))
    truth, swapped, centre = target.log_likelihood(z).tolist()
    assert truth == pytest.approx(swapped, abs=1e-6 * abs(truth))
    assert truth > centre + 10


def test_phase_one_returns_a_physical_box_inside_the_limits():
    result = sb.identify_box(QUICK)
    assert tuple(result.best) == tuple(PHASE1_LIMITS)
    values = np.array(list(result.best.values()))
    limits = sb.box_problem(1).limits
    assert limits.contains(values)
    assert sb._physical(sb.box_problem(1).model, values)
    assert np.isfinite([result.error_before, result.error_after]).all()
    assert result.theta.shape == (QUICK.phase1_particles, 11)


def test_phase_two_runs_each_estimator_deterministically():
    runs = sb.locate_weights(QUICK, dict(TRUE_BOX), estimators=("CSVGD", "CEM"))
    assert [r.estimator for r in runs] == ["CSVGD", "CEM"]
    assert all(r.theta.shape == (QUICK.n_particles, 4) for r in runs)
    again = sb.locate_weights(QUICK, dict(TRUE_BOX), estimators=("CEM",))[0]
    np.testing.assert_array_equal(again.theta, runs[1].theta)


def test_mode_shares():
    theta = np.array([
        [0.12, 0.01, -0.12, -0.01],  # balanced, weight 1 far on the right
        [0.09, 0.0, -0.08, 0.0],  # balanced within 2 cm
        [-0.1, 0.03, 0.1, -0.03],  # the swap
        [0.1, 0.0, 0.1, 0.0],  # both on the right: tilts the box
        [-0.09, 0.0, 0.14, 0.0],  # 5 cm off balance
        [0.03, 0.0, -0.03, 0.0],  # balanced, but near the centre: in neither mode
    ])
    assert sb.mode_shares(theta) == (2 / 6, 1 / 6)
    assert sb.mode_shares(theta, radius=0.0001) == (1 / 6, 1 / 6)
    assert sb.mode_shares(theta, reach=0.01) == (3 / 6, 1 / 6)
    assert sb.mode_shares(theta, radius=0.06) == (2 / 6, 2 / 6)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: sb.SIZES["huge"], ValueError, "SCALE"),
        (lambda: replace(QUICK, iterations=0), ValueError, "iterations"),
        (lambda: replace(QUICK, n_jobs=0), ValueError, "n_jobs"),
        (lambda: sb.box_problem(3), ValueError, "phase"),
        (lambda: sb.box_problem(1, box=dict(TRUE_BOX)), ValueError, "box"),
        (lambda: sb.box_problem(2, box={"w1x": 0.1}), ValueError, "box"),
        (lambda: sb.box_problem(2, weights={"w1x": 0.1}), ValueError, "weights"),
        (lambda: sb.box_problem(1, weights=dict(TRUE_WEIGHTS)), ValueError, "weights"),
        (lambda: sb.identify_box("quick"), TypeError, "s must be"),
        (lambda: sb.locate_weights(QUICK, dict(TRUE_BOX), estimators=("HMC",)), ValueError,
         "estimators"),
        (lambda: sb.locate_weights(QUICK, dict(TRUE_BOX), estimators="CEM"), ValueError,
         "estimators"),
        (lambda: sb.locate_weights(QUICK, [1.0]), TypeError, "box"),
        (lambda: sb.mode_shares(np.zeros((3, 3))), ValueError, "theta"),
        (lambda: sb.mode_shares(np.full((3, 4), np.nan)), ValueError, "theta"),
        (lambda: sb.mode_shares(np.zeros((3, 4)), radius=0), ValueError, "radius"),
        (lambda: sb.mode_shares(np.zeros((3, 4)), reach=-1), ValueError, "reach"),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_phase_two_traces_its_particles():
    run = sb.locate_weights(QUICK, dict(TRUE_BOX), estimators=("CSVGD",))[0]
    trace = run.trace
    assert trace["iterations"][0] == 0 and trace["iterations"][-1] == QUICK.iterations
    assert len(trace["in_modes"]) == len(trace["balance"]) == len(trace["iterations"])
    assert (trace["balance"][-1], trace["reach"][-1]) == sb.weight_summary(run.theta)
    assert sum(sb.mode_shares(run.theta)) == trace["in_modes"][-1]


def test_the_trace_shows_where_the_paper_stopped():
    """A run longer than the paper's records its particles at the paper's run length, and
    ``paper_stop`` reads the trace there."""
    paper = sb.SIZES["paper"].iterations
    assert sb._trace_every(8 * paper) * 5 == paper and sb._trace_every(10) == 1
    iterations = np.arange(0, 8 * paper + 1, sb._trace_every(8 * paper))
    assert paper in iterations
    share = np.linspace(0.0, 1.0, len(iterations))
    trace = {"iterations": iterations, "in_modes": share, "balance": share, "reach": 2 * share}
    run = sb.WeightRun("CSVGD", 1.0, np.zeros((3, 4)), 0.0, {}, trace)
    at, in_modes, reach = sb.paper_stop(run)
    k = int(np.flatnonzero(iterations == paper)[0])
    assert (at, in_modes, reach) == (paper, share[k], 2 * share[k])
    with pytest.raises(ValueError, match="no trace"):
        sb.paper_stop(sb.WeightRun("CSVGD", 1.0, np.zeros((3, 4)), 0.0))
    with pytest.raises(TypeError, match="WeightRun"):
        sb.paper_stop(trace)


def test_weight_summary_and_limits():
    balanced = np.array([[0.1, 0.0, -0.1, 0.0], [-0.12, 0.01, 0.12, -0.01], [0.0, 0.0, 0.05, 0]])
    balance, reach = sb.weight_summary(balanced)
    assert balance == pytest.approx(0.0) and reach == pytest.approx(0.1)
    limits = {"a": (0.0, 1.0), "b": (-1.0, 1.0)}
    assert sb.at_limits({"a": 0.995, "b": 0.0}, limits) == ["a"]
    assert sb.at_limits({"a": 0.5, "b": -0.99}, limits, fraction=0.01) == ["b"]
    assert sb.at_limits({"a": 0.5, "b": -0.9}, limits) == []
    with pytest.raises(ValueError, match="without limits"):
        sb.at_limits({"c": 0.0}, limits)
    with pytest.raises(ValueError, match="fraction"):
        sb.at_limits({"a": 0.0}, limits, fraction=0.0)
