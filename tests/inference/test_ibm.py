"""The IBM double-pendulum loader: file format, angle convention, derivatives, segments, stand-in.

Most tests write synthetic runs (markers of known angles, in image pixels × 5 with y down) to
``tmp_path``; the tests on the real data skip when the data set is not installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.inference import ibm
from physid.inference.pendulum import DEFAULTS, REAL_LIMITS, DoublePendulum

L1, L2 = 589.3, 450.7  # file units, like runs 2-17
PIVOT = (1200.0, 1175.0)


def markers_from_angles(q0, q1, lengths=(L1, L2), pivot=PIVOT, rounded=False):
    """Markers (T, 3, 2) in image units (y down) of the model's angles (y up, CCW)."""
    q0, q1 = np.asarray(q0, dtype=float), np.asarray(q1, dtype=float)
    l1, l2 = lengths
    elbow = np.stack((l1 * np.sin(q0), -l1 * np.cos(q0)), -1)
    tip = elbow + np.stack((l2 * np.sin(q0 + q1), -l2 * np.cos(q0 + q1)), -1)
    up = np.stack((np.zeros_like(elbow), elbow, tip), 1)  # relative to the pivot, y up
    image = np.empty_like(up)
    image[..., 0] = pivot[0] + up[..., 0]
    image[..., 1] = pivot[1] - up[..., 1]
    return np.rint(image) if rounded else image


def write_run(path, markers):
    rows = np.rint(np.asarray(markers)).astype(int).reshape(len(markers), 6)
    path.write_text("".join(",".join(map(str, row)) + "\n" for row in rows))
    return path


def swinging(frames, dt=ibm.DT, seed=None):
    """Known angles of a lively pendulum: link 1 turns over twice, link 2 keeps spinning."""
    t = np.arange(frames) * dt
    q0 = 2.8 * np.sin(2 * math.pi * 1.2 * t) + 1.6 * t
    q1 = -9.0 * t + 1.5 * np.sin(2 * math.pi * 2.1 * t + 0.3)
    return np.stack((q0, q1), 1)


@pytest.fixture
def run_dir(tmp_path):
    """Runs 0-4 of a synthetic data set, 600 frames each (run r starts r/10 s later)."""
    folder = tmp_path / "original"
    folder.mkdir()
    for run in range(5):
        q = swinging(600 + 40 * run)[40 * run :]
        write_run(folder / f"{run}.csv", markers_from_angles(q[:, 0], q[:, 1], rounded=True))
    (folder / "notes.txt").write_text("not a run\n")
    (folder / "a.csv").write_text("1,2,3,4,5,6\n")
    return folder


@pytest.fixture
def no_data(monkeypatch):
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, "off")
    assert ibm.data_dir() is None


# -- the angle convention ----------------------------------------------------------------------


def test_hand_checked_frames():
    # Image y points down. Elbow straight below the pivot: hanging, q0 = 0. Elbow to the right
    # (image x larger): link 1 turned counter-clockwise by a quarter turn in the y-up frame.
    # Tip further along to the right of a horizontal link 1 and then straight up on screen
    # (image y smaller): link 2 turned a further quarter turn counter-clockwise, q1 = +pi/2.
    markers = np.array(
        [
            [[0, 0], [0, 10], [0, 18]],
            [[0, 0], [10, 0], [18, 0]],
            [[0, 0], [10, 0], [10, -8]],
            [[0, 0], [-10, 0], [-10, 8]],
        ],
        dtype=float,
    )
    angles = np.array([ibm.joint_angles(m[None])[0] for m in markers])
    np.testing.assert_allclose(
        angles, [[0, 0], [math.pi / 2, 0], [math.pi / 2, math.pi / 2], [-math.pi / 2, math.pi / 2]]
    )


def test_round_trip_recovers_angles_past_pi():
    q = swinging(3000)
    assert np.ptp(q[:, 0]) > 2 * math.pi and np.ptp(q[:, 1]) > 4 * math.pi
    recovered = ibm.joint_angles(markers_from_angles(q[:, 0], q[:, 1]))
    np.testing.assert_allclose(recovered, q, atol=1e-12)
    # Rounded to whole file units: within the quantisation of the markers.
    rounded = ibm.joint_angles(markers_from_angles(q[:, 0], q[:, 1], rounded=True))
    assert np.abs(rounded - q).max() < 2.0 / L2


def test_first_frame_lies_in_minus_pi_pi():
    q = swinging(200) + np.array([4 * math.pi, -6 * math.pi])
    recovered = ibm.joint_angles(markers_from_angles(q[:, 0], q[:, 1]))
    np.testing.assert_allclose(recovered, q - np.array([4 * math.pi, -6 * math.pi]), atol=1e-12)


def _check_geometry(markers, angles):
    """The model's tip_positions at per-frame link lengths reproduce the markers (y up)."""
    lengths = np.linalg.norm(np.diff(markers, axis=1), axis=2)
    model = DoublePendulum(names=("l1", "l2"), compiled=False)
    # One model per frame (theta (T, 2)), each with its one-frame trajectory (T, 1, 4).
    states = np.concatenate((angles, np.zeros_like(angles)), 1)[:, None]
    positions = model.tip_positions(torch.from_numpy(lengths), torch.from_numpy(states))
    positions = positions.numpy()[:, 0]
    measured = markers[:, 1:] - markers[:, :1]
    measured[..., 1] *= -1  # image y down -> y up
    np.testing.assert_allclose(positions, measured, atol=1e-9)


def test_convention_matches_the_models_geometry(tmp_path):
    q = swinging(1000)
    path = write_run(tmp_path / "0.csv", markers_from_angles(q[:, 0], q[:, 1]))
    markers = ibm.read_markers(path)
    _check_geometry(markers, ibm.joint_angles(markers))


def test_joint_angles_rejects_bad_markers():
    with pytest.raises(ValueError, match="markers"):
        ibm.joint_angles(np.zeros((5, 2, 2)))
    with pytest.raises(ValueError, match="markers"):
        ibm.joint_angles(np.full((5, 3, 2), np.nan))
    with pytest.raises(TypeError, match="markers"):
        ibm.joint_angles("markers")


# -- derivatives ----------------------------------------------------------------------------------


def test_velocities_are_second_order_including_the_ends():
    errors = []
    for dt in (1e-2, 5e-3, 2.5e-3):
        t = np.arange(0.0, 1.0 + dt / 2, dt)
        q = np.stack((np.sin(3 * t), np.cos(5 * t) + t**3), 1)
        exact = np.stack((3 * np.cos(3 * t), -5 * np.sin(5 * t) + 3 * t**2), 1)
        error = np.abs(ibm.velocities(q, dt=dt) - exact)
        errors.append((error[1:-1].max(), max(error[0].max(), error[-1].max())))
    errors = np.array(errors)
    ratios = errors[:-1] / errors[1:]
    assert np.all((ratios > 3.6) & (ratios < 4.4)), ratios  # halving dt quarters the error
    assert errors[-1].max() < 1e-3


def test_velocities_accepts_numpy_and_torch_scalars():
    q = np.arange(10.0)[:, None] * [1.0, 2.0]
    for dt in (np.float32(0.5), torch.tensor(0.5, dtype=torch.float64), 0.5):
        np.testing.assert_allclose(ibm.velocities(q, dt=dt), [[2.0, 4.0]] * 10)


@pytest.mark.parametrize(
    ("angles", "dt", "name"),
    [(np.zeros((2, 2)), 0.1, "angles"), (np.zeros((5, 2, 2)), 0.1, "angles"),
     (np.zeros((5, 2)), 0.0, "dt"), (np.zeros((5, 2)), -1.0, "dt"),
     (np.zeros((5, 2)), math.inf, "dt")],
)  # fmt: skip
def test_velocities_rejects_bad_input(angles, dt, name):
    with pytest.raises(ValueError, match=name):
        ibm.velocities(angles, dt=dt)


def test_start_state_is_exact_on_a_cubic_also_at_the_ends():
    dt = 0.01
    t = np.arange(40) * dt
    q = np.stack((1 - 2 * t + 3 * t**2 - 4 * t**3, 0.5 + t**3), 1)
    for index in (0, 3, 20, 39):
        s = ibm.start_state(q, index, dt=dt)
        ti = t[index]
        expected = [*q[index], -2 + 6 * ti - 12 * ti**2, 3 * ti**2]
        np.testing.assert_allclose(s, expected, atol=1e-9)


def test_start_state_beats_central_differences_on_noisy_angles():
    rng = np.random.default_rng(0)
    frames = 4000
    t = np.arange(frames) * ibm.DT
    q = swinging(frames)
    exact = np.stack(
        (
            2.8 * 2 * math.pi * 1.2 * np.cos(2 * math.pi * 1.2 * t) + 1.6,
            -9.0 + 1.5 * 2 * math.pi * 2.1 * np.cos(2 * math.pi * 2.1 * t + 0.3),
        ),
        1,
    )
    noisy = q + rng.normal(0.0, ibm.STAND_IN_NOISE, q.shape)
    indices = np.arange(20, frames - 20, 7)
    raw = ibm.velocities(noisy)[indices]
    fitted = np.array([ibm.start_state(noisy, i)[2:] for i in indices])
    raw_error = np.sqrt(np.mean((raw - exact[indices]) ** 2))
    fitted_error = np.sqrt(np.mean((fitted - exact[indices]) ** 2))
    # Theory for white noise: sigma / (sqrt(2) dt) = 0.57 rad/s, and 0.18 times that.
    assert 0.5 < raw_error < 0.65
    assert fitted_error < 0.25 * raw_error
    angle_error = np.sqrt(
        np.mean((np.array([ibm.start_state(noisy, i)[:2] for i in indices]) - q[indices]) ** 2)
    )
    assert angle_error < ibm.STAND_IN_NOISE


def test_start_state_accepts_scalars_and_rejects_bad_input():
    q = swinging(50)
    reference = ibm.start_state(q, 10)
    for index in (np.int64(10), torch.tensor(10)):
        np.testing.assert_array_equal(ibm.start_state(q, index), reference)
    with pytest.raises(ValueError, match="index"):
        ibm.start_state(q, 50)
    with pytest.raises(ValueError, match="index"):
        ibm.start_state(q, -1)
    with pytest.raises(TypeError, match="index"):
        ibm.start_state(q, 2.0)
    with pytest.raises(ValueError, match="half_width"):
        ibm.start_state(q, 10, half_width=0)
    with pytest.raises(ValueError, match="degree"):
        ibm.start_state(q, 10, half_width=1, degree=3)
    with pytest.raises(ValueError, match="degree"):
        ibm.start_state(q, 10, degree=0)
    with pytest.raises(ValueError, match="dt"):
        ibm.start_state(q, 10, dt=0)
    with pytest.raises(ValueError, match="angles"):
        ibm.start_state(q[:, :1], 10)


# -- reading files --------------------------------------------------------------------------------


def test_read_markers_reads_integer_rows(tmp_path):
    markers = markers_from_angles(*swinging(30).T, rounded=True)
    path = write_run(tmp_path / "7.csv", markers)
    read = ibm.read_markers(path)
    assert read.dtype == np.float64 and read.shape == (30, 3, 2)
    np.testing.assert_array_equal(read, markers)
    # Windows line ends and a last line without its newline are fine.
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes(path.read_bytes().replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    np.testing.assert_array_equal(ibm.read_markers(crlf), markers)


def _lines(n=12):
    return [f"{100 + i},{200 + i},{300 + i},{400 + i},{500 + i},{600 + i}" for i in range(n)]


@pytest.mark.parametrize(
    ("edit", "line", "words"),
    [
        (lambda ls: ls.__setitem__(3, "1,2,3,4,5"), 4, "found 5 fields"),
        (lambda ls: ls.__setitem__(5, "1,2,3,4,5,6,7"), 6, "found 7 fields"),
        (lambda ls: ls.__setitem__(6, "1,2,x3,4,5,6"), 7, "field 3 is not an integer"),
        (lambda ls: ls.__setitem__(8, "1,2,3,4.5,5,6"), 9, "field 4 is not an integer"),
        (lambda ls: ls.__setitem__(2, ""), 3, "found 0 fields"),
        (lambda ls: ls.__setitem__(1, "1, 2,3,4,5,6"), 2, "field 2 is not an integer"),
    ],
)
def test_read_markers_names_file_and_line_of_a_malformed_row(tmp_path, edit, line, words):
    lines = _lines()
    edit(lines)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"bad\.csv: line {line}: .*{words}"):
        ibm.read_markers(path)


def test_read_markers_detects_a_truncated_or_short_file(tmp_path):
    path = tmp_path / "cut.csv"
    path.write_text("\n".join(_lines()) + "\n" + "1,2,3")
    with pytest.raises(ValueError, match=r"cut\.csv: line 13: .*truncated last line"):
        ibm.read_markers(path)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty\.csv: line 1: the file is empty"):
        ibm.read_markers(empty)
    blank = tmp_path / "blank.csv"
    blank.write_text("\n\n")
    with pytest.raises(ValueError, match=r"blank\.csv: line 1"):
        ibm.read_markers(blank)
    short = tmp_path / "short.csv"
    short.write_text("\n".join(_lines(ibm.MIN_ROWS - 1)) + "\n")
    with pytest.raises(ValueError, match=rf"short\.csv: line {ibm.MIN_ROWS}: .*ends after"):
        ibm.read_markers(short)
    with pytest.raises(ValueError, match="path"):
        ibm.read_markers(tmp_path / "missing.csv")


# -- runs -----------------------------------------------------------------------------------------


def test_data_dir_and_available_runs(monkeypatch, run_dir, no_data):
    assert ibm.available_runs() == ()
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, str(run_dir))
    assert ibm.data_dir() == run_dir
    assert ibm.available_runs() == (0, 1, 2, 3, 4)
    assert ibm.available_runs(str(run_dir)) == (0, 1, 2, 3, 4)
    with pytest.raises(ValueError, match="directory"):
        ibm.available_runs(run_dir / "nowhere")


def test_data_files_are_the_runs_in_order(monkeypatch, run_dir, no_data):
    assert ibm.data_files() == ()
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, str(run_dir))
    assert ibm.data_files() == tuple(run_dir / f"{run}.csv" for run in range(5))


def test_a_named_data_folder_without_runs_is_an_error(monkeypatch, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no runs here\n")
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, str(empty))
    with pytest.raises(ValueError, match="PHYSID_IBM_DATA.*empty.*no <run>.csv"):
        ibm.data_dir()
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, str(empty / "notes.txt"))
    with pytest.raises(ValueError, match="PHYSID_IBM_DATA must name a folder.*notes.txt"):
        ibm.data_dir()
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, "OFF")
    assert ibm.data_dir() is None


@pytest.mark.parametrize("names", [("3.csv", "03.csv"), ("00.csv", "01.csv")])
def test_zero_padded_run_files_are_refused(monkeypatch, tmp_path, names):
    folder = tmp_path / "padded"
    folder.mkdir()
    for name in names:
        (folder / name).write_text("1,2,3,4,5,6\n")
    monkeypatch.setenv(ibm.ENVIRONMENT_VARIABLE, str(folder))
    padded = [name for name in names if name.startswith("0") and name != "0.csv"]
    with pytest.raises(ValueError, match=rf"zero-padded run files \['{padded[0]}'"):
        ibm.data_dir()
    with pytest.raises(ValueError, match="zero-padded"):
        ibm.available_runs(folder)


def test_load_run(run_dir):
    run = ibm.load_run(np.int64(3), run_dir)
    assert run.number == 3 and run.frames == 600
    q = swinging(720)[120:]
    turns = np.round((run.angles[0] - q[0]) / (2 * math.pi))  # the first frame is in (-pi, pi]
    assert np.abs(run.angles - q - 2 * math.pi * turns).max() < 2.0 / L2
    np.testing.assert_allclose(run.velocities, ibm.velocities(run.angles))
    np.testing.assert_allclose(run.states, np.concatenate((run.angles, run.velocities), 1))
    np.testing.assert_allclose(run.link_lengths, [L1, L2], atol=0.6)
    assert run.scale == pytest.approx(DEFAULTS["l1"] / run.link_lengths[0])
    assert run.implied_l2 == pytest.approx(DEFAULTS["l1"] * L2 / L1, rel=2e-3)
    with pytest.raises(ValueError, match="read-only"):
        run.angles[0, 0] = 1.0


def test_load_run_errors(run_dir, no_data):
    with pytest.raises(ValueError, match=r"number .*runs 0, 1, 2, 3, 4.* got 7"):
        ibm.load_run(7, run_dir)
    with pytest.raises(ValueError, match="number"):
        ibm.load_run(-1, run_dir)
    with pytest.raises(ValueError, match="directory"):
        ibm.load_run(0, run_dir / "nowhere")
    with pytest.raises(FileNotFoundError, match="make data"):
        ibm.load_run(0)


def test_segments(run_dir):
    run = ibm.load_run(2, run_dir)
    cut = ibm.segments(run, n_steps=50, count=3, start=100, gap=9)
    assert cut.shape == (3, 51, 4)
    for k, first in enumerate((100, 160, 220)):
        state = ibm.start_state(run.angles, first)
        turns = (cut[k, 0, :2] - state[:2]) / (2 * math.pi)
        np.testing.assert_allclose(turns, np.round(turns), atol=1e-12)
        np.testing.assert_allclose(cut[k, 0, 2:], state[2:])
        measured = run.angles[first + 1 : first + 51] - state[:2]
        np.testing.assert_allclose(cut[k, 1:, :2] - cut[k, 0, :2], measured, atol=1e-12)
        np.testing.assert_allclose(cut[k, 1:, 2:], run.velocities[first + 1 : first + 51])
    assert np.all((cut[:, 0, :2] >= -math.pi) & (cut[:, 0, :2] < math.pi))
    # Back to back: the last frame is frame 599 of 600.
    assert ibm.segments(run, n_steps=99, count=6).shape == (6, 100, 4)
    with pytest.raises(ValueError, match=r"count=7 .*n_steps=99"):
        ibm.segments(run, n_steps=99, count=7)
    with pytest.raises(ValueError, match="n_steps"):
        ibm.segments(run, n_steps=0, count=1)
    with pytest.raises(ValueError, match="gap"):
        ibm.segments(run, n_steps=5, count=2, gap=-1)
    with pytest.raises(TypeError, match="run"):
        ibm.segments(run.states, n_steps=5, count=1)


# -- the stand-in and the experiment's data ----------------------------------------------------


def test_stand_in_theta_is_inside_the_papers_limits():
    assert set(ibm.STAND_IN_THETA) == set(REAL_LIMITS)
    for name, value in ibm.STAND_IN_THETA.items():
        low, high = REAL_LIMITS[name]
        assert low <= value <= high, name


def test_stand_in_is_deterministic_and_shaped_like_segments():
    first = ibm.stand_in([2, 5], n_steps=60, count=3, seed=4)
    again = ibm.stand_in((2, 5), n_steps=60, count=3, seed=np.int64(4))
    assert sorted(first) == [2, 5]
    for run in (2, 5):
        assert first[run].shape == (3, 61, 4)
        np.testing.assert_array_equal(first[run], again[run])
    np.testing.assert_array_equal(ibm.stand_in([5], 60, 3, seed=4)[5], first[5])
    other = ibm.stand_in([2], n_steps=60, count=3, seed=5)
    assert not np.allclose(other[2], first[2])
    trajectories = first[2]
    assert np.all((trajectories[:, 0, :2] >= -math.pi) & (trajectories[:, 0, :2] < math.pi))
    # Velocities are the central differences of the (noisy) angles inside each trajectory
    # (row 0 is the estimated start state, not a measured one).
    inner = (trajectories[:, 3:, :2] - trajectories[:, 1:-2, :2]) / (2 * ibm.DT)
    np.testing.assert_allclose(trajectories[:, 2:-1, 2:], inner, atol=1e-9)
    jumps = np.abs(np.diff(trajectories[:, :, :2], axis=1)).max()
    assert jumps < 0.1  # continuous angles, no wrapping inside a trajectory
    assert np.abs(trajectories[..., 2:]).max() < 40


def test_stand_in_follows_the_model():
    # Strong joint friction (I / d = 7 ms) stops the links within the lead-in frames.
    heavy = ibm.stand_in([0], n_steps=40, count=4, theta={"d1": 0.3, "d2": 0.3})[0]
    light = ibm.stand_in([0], n_steps=40, count=4)[0]
    assert np.abs(heavy[:, 1:, 2:]).mean() < 0.2 * np.abs(light[:, 1:, 2:]).mean()
    values = [ibm.STAND_IN_THETA[n] for n in REAL_LIMITS]
    np.testing.assert_array_equal(ibm.stand_in([0], 40, 4, theta=values)[0], light)


def test_stand_in_rejects_bad_input():
    with pytest.raises(ValueError, match="theta"):
        ibm.stand_in([0], 10, 1, theta={"l2": 0.1})  # not estimated: drawing only
    with pytest.raises(ValueError, match="theta"):
        ibm.stand_in([0], 10, 1, theta=[0.1] * 10)
    with pytest.raises(ValueError, match="theta"):
        ibm.stand_in([0], 10, 1, theta={"m1": -0.1})
    with pytest.raises(ValueError, match="run_numbers"):
        ibm.stand_in([1, 1], 10, 1)
    with pytest.raises(ValueError, match="run_numbers"):
        ibm.stand_in([], 10, 1)
    with pytest.raises(TypeError, match="run_numbers"):
        ibm.stand_in(3, 10, 1)
    with pytest.raises(ValueError, match="count"):
        ibm.stand_in([0], 10, 0)
    with pytest.raises(ValueError, match="seed"):
        ibm.stand_in([0], 10, 1, seed=-1)


def test_real_data_from_a_folder(run_dir):
    data = ibm.real_data(n_steps=30, n_tests=3, reference_run=2, start=10, directory=run_dir)
    assert data.real and data.runs == (2, 3, 4, 0)
    assert data.reference_run == 2 and data.test_runs == (3, 4, 0)
    assert data.reference.shape == (1, 31, 4) and data.tests.shape == (3, 31, 4)
    assert data.source == "IBM runs 2 (reference) and 0, 3–4 (tests), frames 10–40"
    np.testing.assert_allclose(
        data.tests[1], ibm.segments(ibm.load_run(4, run_dir), 30, 1, start=10)[0]
    )
    with pytest.raises(ValueError, match="n_tests"):
        ibm.real_data(30, n_tests=5, directory=run_dir)
    with pytest.raises(ValueError, match="reference_run"):
        ibm.real_data(30, reference_run=9, directory=run_dir)


def test_real_data_falls_back_to_the_stand_in(no_data):
    data = ibm.real_data(n_steps=20, seed=3)
    assert not data.real and "simulated stand-in" in data.source
    assert data.runs == (2, *range(3, 13))
    assert data.reference.shape == (1, 21, 4) and data.tests.shape == (10, 21, 4)
    simulated = ibm.stand_in(data.runs, 20, 1, seed=3)
    np.testing.assert_array_equal(data.tests[4], simulated[7][0])


# -- the real data (skipped where it is not installed) -----------------------------------------

ROWS = {0: 17782, 2: 17284, 5: 18068, 11: 18284, 17: 18337}


@pytest.fixture(scope="module")
def real_runs():
    if ibm.data_dir() is None:
        pytest.skip("the IBM double-pendulum data are not installed (make data)")
    return {number: ibm.load_run(number) for number in ibm.available_runs()}


def test_real_runs_load(real_runs):
    assert tuple(real_runs) == ibm.PROJECT_RUNS
    for number, rows in ROWS.items():
        assert real_runs[number].frames == rows


def test_real_link_lengths_and_scale(real_runs):
    np.testing.assert_allclose(real_runs[5].link_lengths, [589, 451], atol=1.5)
    np.testing.assert_allclose(real_runs[0].link_lengths, [602, 461], atol=1.5)
    for run in real_runs.values():
        assert run.implied_l2 == pytest.approx(0.070, abs=0.001)
        assert run.link_lengths[1] / run.link_lengths[0] == pytest.approx(0.765, abs=0.002)


def test_real_angles_follow_the_models_geometry(real_runs):
    run = real_runs[5]
    _check_geometry(np.array(run.markers), run.angles)


def test_real_velocities(real_runs):
    peaks = np.array([np.abs(run.velocities[:, 0]).max() for run in real_runs.values()])
    assert np.all((peaks > 20) & (peaks < 32)), peaks
    assert 23 < np.median(peaks) < 27


def test_real_data_defaults(real_runs):
    data = ibm.real_data(400)
    assert data.real and data.runs == (2, *range(3, 13)) and data.start == ibm.START == 400
    assert data.source == "IBM runs 2 (reference) and 3–12 (tests), frames 400–800"
    assert data.reference.shape == (1, 401, 4) and data.tests.shape == (10, 401, 4)
