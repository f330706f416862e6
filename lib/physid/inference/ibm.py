"""The IBM "Double Pendulum Chaotic" marker tracks: reading, joint angles, states, stand-in.

The real-data experiment of Heiden et al. (2022) fits the 11-parameter
:class:`~physid.inference.pendulum.DoublePendulum` to a real double pendulum filmed at
400 Hz: IBM's "Double Pendulum Chaotic" data set (Asseman, Kornuta & Ozcan 2018; licence
CDLA-Sharing-1.0). This module turns its files into trajectories of the model's state.

The data. Each run is one headerless CSV file ``<run>.csv`` with one row per video frame
(:data:`RATE` = 400 Hz) and six integer columns ``x0, y0, x1, y1, x2, y2``: the pivot, the
elbow and the tip markers in image pixel coordinates multiplied by 5 (the frames were upscaled
5× for sub-pixel template matching), with image ``y`` pointing **down**. :func:`data_dir`
finds the folder: the environment variable ``PHYSID_IBM_DATA`` if set, else
``data/ibm-double-pendulum/original`` under the repository root. ``make data`` links the
project's copy there when ``../shared/data/ibm-double-pendulum`` exists; otherwise get the
files from the GitHub repository ``erwincoumans/tiny-differentiable-simulator``, folder
``data/ibm-double-pendulum/original/dpc_dataset_csv/`` (runs 0–20), and put them in
``data/ibm-double-pendulum/original/`` as ``<run>.csv``.

The angles. The model's state is ``s = [q0, q1, q̇0, q̇1]`` in a frame with ``y`` up and angles
counter-clockwise positive: ``q0`` is link 1 from hanging straight down and ``q1`` link 2
relative to link 1, so the elbow sits at ``l1 (sin q0, −cos q0)`` from the pivot
(:meth:`~physid.inference.pendulum.DoublePendulum.tip_positions`). :func:`joint_angles`
flips the image ``y`` to get there (the derivation is in its docstring) and unwraps along
time, so a link that turns over keeps counting past ±π.

The velocities. :func:`velocities` takes second-order central differences of the angles, as the
paper's "finite differences at 400 Hz"; the state at which a trajectory starts is instead
estimated by a local least-squares polynomial (:func:`start_state`), whose velocity is far
less noisy than a difference of two noisy angles. The markers are whole file units (a fifth of
a pixel, 1/589 rad of link 1's angle) and jitter by about one; on run 5 the angle noise left
by a local cubic is about 7e-4 rad on ``q0`` and 1.5e-3 rad on ``q1``, so central differences
carry about 0.2 and 0.4 rad/s of noise and :func:`start_state` about a sixth of that.

Lengths. Only ratios are measured in pixels. With the model's ``l1`` = 0.091 m
(:data:`~physid.inference.pendulum.DEFAULTS`), :attr:`Run.scale` converts file units to
metres and :attr:`Run.implied_l2` gives the elbow-to-tip distance the data imply, about
0.070 m (used for drawing only: the dynamics do not depend on it). The pivot-to-elbow distance
0.091 m lies inside the paper's prior [0.08, 0.3] m for the joint offset ``l1`` it estimates.
Runs 0–1 were filmed with the camera slightly further in (link lengths about 2% longer in
pixels) than runs 2–20.

Without the data. :func:`stand_in` simulates trajectories that look like the real ones (start
states of a real run's kind, the model at :data:`STAND_IN_THETA`, angle noise of
:data:`STAND_IN_NOISE`, the same velocity and start-state estimates), so that a chapter can run
where the data set is absent; :func:`real_data` falls back to it and says so in
``RealData.real`` and ``RealData.source`` (the chapter says it loudly).
"""

from __future__ import annotations

import io
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from physid.core.validate import (
    check_array,
    check_count,
    check_positive,
    check_seed,
)
from physid.inference.pendulum import DEFAULTS, REAL_LIMITS, DoublePendulum

__all__ = [
    "DT",
    "ENVIRONMENT_VARIABLE",
    "MIN_ROWS",
    "NO_DATA",
    "PROJECT_RUNS",
    "RATE",
    "SHARED_CAMERA_RUNS",
    "STAND_IN_NOISE",
    "STAND_IN_THETA",
    "START",
    "RealData",
    "Run",
    "available_runs",
    "data_dir",
    "data_files",
    "joint_angles",
    "load_run",
    "read_markers",
    "real_data",
    "segments",
    "stand_in",
    "start_state",
    "velocities",
]

#: The camera's frame rate (Hz): one CSV row per frame.
RATE = 400

#: The time between two rows (s), ``1 / RATE``.
DT = 1 / RATE

#: The environment variable that names the folder of ``<run>.csv`` files (it overrides the
#: repository's ``data/ibm-double-pendulum/original``).
ENVIRONMENT_VARIABLE = "PHYSID_IBM_DATA"

#: The values of ``PHYSID_IBM_DATA`` (in any case) that ask for no data: the stand-in.
NO_DATA = ("off", "none")

#: The fewest rows a run file may have; a shorter one is treated as truncated.
MIN_ROWS = 10

#: The runs of the project's copy of the data (runs 18–20 of the 21 are not included).
PROJECT_RUNS: tuple[int, ...] = tuple(range(18))

#: The runs filmed from one camera position (the same pixel link lengths, ≈ 589 and ≈ 451
#: file units); runs 0 and 1 were filmed from a slightly different one (≈ 602 and ≈ 461).
SHARED_CAMERA_RUNS: tuple[int, ...] = tuple(range(2, 21))

#: The default first frame of the trajectories of :func:`real_data`: one second into the run,
#: well clear of the hand launch (the camera starts on motion).
START = RATE

#: The parameters of the simulated stand-in (:func:`stand_in`), the 11 of
#: :data:`~physid.inference.pendulum.REAL_LIMITS`, each within its limits: 0.1 kg links
#: with their centres of mass near mid-link, the prior's smallest inertia and a light viscous
#: friction, joint 2 at 0.091 m along link 1 (the recordings' pivot-to-elbow distance).
STAND_IN_THETA: dict[str, float] = {
    "m1": 0.1,
    "I1": 0.002,
    "c1x": 0.045,
    "c1y": 0.0,
    "d1": 0.001,
    "l1": 0.091,
    "m2": 0.1,
    "I2": 0.002,
    "c2x": 0.035,
    "c2y": 0.0,
    "d2": 0.001,
}

#: The standard deviation (rad) of the noise added to the stand-in's angles: one to two file
#: units of marker position on link 1.
STAND_IN_NOISE = 2e-3

_RUN_FILE = re.compile(r"(\d+)\.csv")
_ROW = r"-?\d+(?:,-?\d+){5}"
_WHOLE_FILE = re.compile(rf"(?:{_ROW}\r?\n)*{_ROW}\r?\n?")
_FIELD = re.compile(r"-?\d+")
# Rows of the stand-in simulated beyond both ends of each trajectory, so that its velocities
# and start state are estimated from the same neighbourhoods as those of a real run's.
_LEAD = 8


# -- where the data are --------------------------------------------------------------------------


def _run_files(folder: Path) -> dict[int, Path]:
    """The ``<run>.csv`` files of ``folder`` by run number; a zero-padded name (``03.csv``,
    which :func:`load_run` would never open, or a second file for run 3) is a ValueError."""
    try:
        found = [(m, p) for p in folder.iterdir() if (m := _RUN_FILE.fullmatch(p.name))]
    except OSError:
        return {}
    padded = sorted(p.name for m, p in found if m.group(1) != str(int(m.group(1))))
    if padded:
        raise ValueError(
            f"the data folder {folder} holds zero-padded run files {padded}: runs are read "
            f"as <run>.csv (3.csv, not 03.csv); rename them"
        )
    return {int(m.group(1)): p for m, p in found if p.is_file()}


def _repo_roots() -> list[Path]:
    roots = []
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        for folder in (start, *start.parents):
            if (folder / "pyproject.toml").is_file():
                if folder not in roots:
                    roots.append(folder)
                break
    return roots


def data_dir() -> Path | None:
    """The folder holding the ``<run>.csv`` files, or None where there is none.

    The environment variable ``PHYSID_IBM_DATA`` (:data:`ENVIRONMENT_VARIABLE`) if it is set
    (and then only it): a folder, which must hold at least one ``<run>.csv`` (else a
    ValueError, not a silent stand-in), or ``off`` (:data:`NO_DATA`) for no data even where
    they are present. Else ``data/ibm-double-pendulum/original`` (or its subfolder
    ``dpc_dataset_csv``, the layout of the public copy) under the repository root, the folder
    holding ``pyproject.toml`` found upward from this module and from the current working
    directory, if it holds a ``<run>.csv``. A folder with zero-padded run files is refused.
    """
    override = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if override.lower() in NO_DATA:
        return None
    if override:
        folder = Path(override).expanduser()
        if not folder.is_dir():
            raise ValueError(f"{ENVIRONMENT_VARIABLE} must name a folder, got {override!r}")
        if not _run_files(folder):
            raise ValueError(
                f"{ENVIRONMENT_VARIABLE} names {override!r}, which holds no <run>.csv file "
                f"(set it to 'off' to run on the simulated stand-in)"
            )
        return folder
    for root in _repo_roots():
        original = root / "data" / "ibm-double-pendulum" / "original"
        for folder in (original, original / "dpc_dataset_csv"):
            if folder.is_dir() and _run_files(folder):
                return folder
    return None


def _check_directory(directory: str | Path | None) -> Path | None:
    if directory is None:
        return data_dir()
    if not isinstance(directory, str | os.PathLike):
        raise TypeError(f"directory must be a path, got {directory!r}")
    folder = Path(directory)
    if not folder.is_dir():
        raise ValueError(f"directory must be an existing folder, got {str(directory)!r}")
    return folder


def available_runs(directory: str | Path | None = None) -> tuple[int, ...]:
    """The run numbers with a ``<run>.csv`` in ``directory`` (default :func:`data_dir`),
    sorted; empty when there is no data folder."""
    return tuple(sorted(_runs(directory)))


def data_files(directory: str | Path | None = None) -> tuple[Path, ...]:
    """The ``<run>.csv`` files of ``directory`` (default :func:`data_dir`) in run order: what
    a computation on the data reads (empty when there is no data folder)."""
    runs = _runs(directory)
    return tuple(runs[number] for number in sorted(runs))


def _runs(directory: str | Path | None) -> dict[int, Path]:
    folder = _check_directory(directory)
    return {} if folder is None else _run_files(folder)


# -- reading a run --------------------------------------------------------------------------------


def _diagnose(path: Path, text: str) -> ValueError:
    """The first malformed line of ``text`` as an error naming the file and the line."""
    lines = text.split("\n")
    ends_with_newline = lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    for number, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        fields = line.split(",")
        last = number == len(lines)
        hint = " (a truncated last line)" if last and not ends_with_newline else ""
        if len(fields) != 6:
            return ValueError(
                f"{path}: line {number}: expected 6 comma-separated integers, "
                f"found {len(fields) if line else 0} fields{hint}: {line[:80]!r}"
            )
        for column, value in enumerate(fields, start=1):
            if not _FIELD.fullmatch(value):
                return ValueError(
                    f"{path}: line {number}: field {column} is not an integer{hint}: {value!r}"
                )
    return ValueError(f"{path}: line {len(lines) + 1}: unreadable")  # not reached in practice


def read_markers(path: str | Path) -> np.ndarray:
    """The marker tracks of one run file, ``(T, 3, 2)``: pivot, elbow and tip, ``(x, y)``
    each, as floats in the file's units (image pixels × 5, ``y`` down).

    Every line must hold six comma-separated integers (``\\r\\n`` line ends are accepted; the
    last line may lack its newline). A malformed line (a wrong number of fields, a field that
    is not an integer, a blank line), a truncated last line, an empty file or one with fewer
    than :data:`MIN_ROWS` rows raises a ValueError naming the file and the 1-based line number.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"path must be a path, got {path!r}")
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"path must be an existing file, got {str(path)!r}")
    text = path.read_bytes().decode("latin-1")
    if not text.strip():
        raise ValueError(f"{path}: line 1: the file is empty, expected rows of 6 integers")
    if not _WHOLE_FILE.fullmatch(text):
        raise _diagnose(path, text)
    values = np.loadtxt(io.StringIO(text), delimiter=",", dtype=np.int64, ndmin=2)
    rows = values.shape[0]
    if rows < MIN_ROWS:
        raise ValueError(
            f"{path}: line {rows + 1}: the file ends after {rows} rows; "
            f"a run has at least {MIN_ROWS} (truncated?)"
        )
    return values.reshape(rows, 3, 2).astype(float)


def joint_angles(markers: Any) -> np.ndarray:
    """The joint angles ``[q0, q1]`` (T, 2) of marker tracks ``(T, 3, 2)``, unwrapped in time.

    The model's convention (:class:`~physid.inference.pendulum.DoublePendulum`): ``y`` up,
    angles counter-clockwise positive, ``q0`` link 1 from hanging straight down and ``q1``
    link 2 relative to link 1, so that ``elbow − pivot = L1 (sin q0, −cos q0)`` and
    ``tip − elbow = L2 (sin(q0 + q1), −cos(q0 + q1))``.

    Derivation. In the image (``y`` down) the links point along
    ``a1 = atan2(y1 − y0, x1 − x0)`` and ``a2 = atan2(y2 − y1, x2 − x1)``, and the angles of
    the data set's README are ``q0' = a1 − π/2``, ``q1' = a2 − a1``. Flipping ``y`` to point
    up negates every direction angle (``atan2(−dy, dx) = −atan2(dy, dx)``), so in the model's
    frame link 1 points along ``−a1``, hanging down is ``−π/2``, and ``q0 = −a1 + π/2 = −q0'``,
    ``q1 = −a2 + a1 = −q1'``: the y-up angles are the negatives of the image-frame ones. The
    code computes them directly from the y-up link vectors ``u = (x1 − x0, −(y1 − y0))`` and
    ``v = (x2 − x1, −(y2 − y1))``: ``q0 = atan2(u_x, −u_y)`` and
    ``q1 = atan2(u × v, u · v)`` (exact for any link lengths), then applies ``np.unwrap``
    along time, so the first frame's angles lie in (−π, π] and later ones continue smoothly.
    """
    markers = check_array("markers", markers, shape=(None, 3, 2))
    if markers.shape[0] < 1:
        raise ValueError(f"markers must hold at least one frame, got shape {markers.shape}")
    u = markers[:, 1] - markers[:, 0]
    v = markers[:, 2] - markers[:, 1]
    ux, uy = u[:, 0], -u[:, 1]
    vx, vy = v[:, 0], -v[:, 1]
    q0 = np.arctan2(ux, -uy)
    q1 = np.arctan2(ux * vy - uy * vx, ux * vx + uy * vy)
    return np.unwrap(np.stack((q0, q1), axis=1), axis=0)


def _check_dt(dt: Any) -> float:
    return check_positive("dt", dt)


def velocities(angles: Any, dt: float = DT) -> np.ndarray:
    """Joint velocities of angles sampled every ``dt`` (time on the first axis), same shape.

    Second-order finite differences: central ``(q[t+1] − q[t−1]) / (2 dt)`` inside, and the
    one-sided second-order ``(−3 q[0] + 4 q[1] − q[2]) / (2 dt)`` and
    ``(3 q[−1] − 4 q[−2] + q[−3]) / (2 dt)`` at the two ends (``np.gradient`` with
    ``edge_order=2``); the error is of order ``dt²`` everywhere. Needs at least three samples.
    """
    angles = check_array("angles", angles)
    dt = _check_dt(dt)
    if angles.ndim not in (1, 2) or angles.shape[0] < 3:
        raise ValueError(f"angles must have shape (T,) or (T, k) with T >= 3, got {angles.shape}")
    return np.gradient(angles, dt, axis=0, edge_order=2)


def start_state(
    angles: Any, index: int, dt: float = DT, half_width: int = 8, degree: int = 3
) -> np.ndarray:
    """The state ``[q0, q1, q̇0, q̇1]`` at frame ``index`` of ``angles`` (T, 2), estimated.

    A polynomial of ``degree`` in time is fitted by least squares to each angle over the frames
    ``index − half_width … index + half_width`` (clipped to the run), Savitzky–Golay style, and
    its value and derivative at ``index`` are returned. With white angle noise ``σ``, a
    central difference has velocity noise ``σ / (√2 dt)``; the cubic over 17 frames has 0.18
    times that, at a bias of order ``dt⁴`` times the fifth derivative of the motion (a window
    clipped at an end of the run has more of both). The window must hold more than ``degree``
    frames.
    """
    angles = check_array("angles", angles, shape=(None, 2))
    frames = angles.shape[0]
    if frames < 1:
        raise ValueError(f"angles must hold at least one frame, got shape {angles.shape}")
    index = check_count("index", index, minimum=0, maximum=frames - 1)
    dt = _check_dt(dt)
    half_width = check_count("half_width", half_width, minimum=1)
    degree = check_count("degree", degree, minimum=1)
    low, high = max(0, index - half_width), min(frames - 1, index + half_width)
    if high - low + 1 <= degree:
        raise ValueError(
            f"degree must be below the {high - low + 1} frames of the window around index "
            f"{index} (half_width {half_width}, {frames} frames), got {degree}"
        )
    # Time in units of half_width frames keeps the Vandermonde matrix well conditioned.
    tau = (np.arange(low, high + 1) - index) / half_width
    design = np.vander(tau, degree + 1, increasing=True)
    coefficients, *_ = np.linalg.lstsq(design, angles[low : high + 1], rcond=None)
    return np.concatenate((coefficients[0], coefficients[1] / (half_width * dt)))


# -- runs -----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Run:
    """One run of the data set: its markers and the model's states along it.

    Args:
        number: the run number (the file ``<number>.csv``).
        markers: the marker tracks (T, 3, 2) in file units (:func:`read_markers`).
        angles: the joint angles (T, 2) (:func:`joint_angles`).
        velocities: the joint velocities (T, 2) by central differences (:func:`velocities`).
        link_lengths: the median pivot–elbow and elbow–tip distances (2,) in file units.

    The arrays are stored read-only.
    """

    number: int
    markers: np.ndarray
    angles: np.ndarray
    velocities: np.ndarray
    link_lengths: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "number", check_count("number", self.number, minimum=0))
        markers = check_array("markers", self.markers, shape=(None, 3, 2))
        frames = markers.shape[0]
        arrays = {
            "markers": markers,
            "angles": check_array("angles", self.angles, shape=(frames, 2)),
            "velocities": check_array("velocities", self.velocities, shape=(frames, 2)),
            "link_lengths": check_array("link_lengths", self.link_lengths, shape=(2,)),
        }
        if not bool((arrays["link_lengths"] > 0).all()):
            raise ValueError(f"link_lengths must be > 0, got {arrays['link_lengths']}")
        for name, array in arrays.items():
            array = array.copy()
            array.flags.writeable = False
            object.__setattr__(self, name, array)

    @property
    def frames(self) -> int:
        """The number of frames (rows) of the run."""
        return self.markers.shape[0]

    @property
    def states(self) -> np.ndarray:
        """The states ``[q0, q1, q̇0, q̇1]`` (T, 4): the angles and the central differences."""
        return np.concatenate((self.angles, self.velocities), axis=1)

    @property
    def scale(self) -> float:
        """Metres per file unit, taking link 1 to be the model's ``l1`` = 0.091 m."""
        return DEFAULTS["l1"] / float(self.link_lengths[0])

    @property
    def implied_l2(self) -> float:
        """The length of link 2 (m) the markers imply at :attr:`Run.scale` (about 0.070 m)."""
        return float(self.link_lengths[1]) * self.scale


def _check_run_number(number: Any) -> int:
    return check_count("number", number, minimum=0)


def load_run(number: int, directory: str | Path | None = None) -> Run:
    """Run ``number`` read from ``directory`` (default :func:`data_dir`).

    A ValueError names ``number`` when there is no ``<number>.csv``; a FileNotFoundError says
    where to get the data when no data folder is found.
    """
    number = _check_run_number(number)
    folder = _check_directory(directory)
    if folder is None:
        raise FileNotFoundError(
            "no IBM double-pendulum data found: run `make data`, or set "
            f"{ENVIRONMENT_VARIABLE} to a folder of <run>.csv files"
        )
    path = folder / f"{number}.csv"
    if not path.is_file():
        runs = ", ".join(map(str, available_runs(folder))) or "none"
        raise ValueError(f"number must be a run in {folder} (runs {runs}), got {number!r}")
    markers = read_markers(path)
    angles = joint_angles(markers)
    lengths = np.linalg.norm(np.diff(markers, axis=1), axis=2)
    return Run(
        number=number,
        markers=markers,
        angles=angles,
        velocities=velocities(angles),
        link_lengths=np.median(lengths, axis=0),
    )


def segments(run: Run, n_steps: int, count: int, start: int = 0, gap: int = 0) -> np.ndarray:
    """``count`` consecutive trajectories of ``n_steps`` steps cut from ``run``, (count, n_steps
    + 1, 4).

    Trajectory ``k`` covers the frames ``f_k … f_k + n_steps`` with
    ``f_k = start + k (n_steps + 1 + gap)``: ``gap`` frames are skipped between the last frame
    of one and the first of the next. Row 0 is the estimated :func:`start_state` at ``f_k``;
    rows 1… are the measured angles and their central-difference velocities. The run's angles
    are unwrapped from its first frame, so a link that has turned over holds several turns by
    ``f_k``; each trajectory's angles are shifted by the whole turns that bring its row 0 into
    [−π, π) (the dynamics are periodic in both angles, so nothing else changes).
    """
    if not isinstance(run, Run):
        raise TypeError(f"run must be a Run, got {type(run).__name__}")
    n_steps = check_count("n_steps", n_steps)
    count = check_count("count", count)
    start = check_count("start", start, minimum=0)
    gap = check_count("gap", gap, minimum=0)
    stride = n_steps + 1 + gap
    last = start + (count - 1) * stride + n_steps
    if last >= run.frames:
        raise ValueError(
            f"run {run.number} has {run.frames} frames, too few for count={count} trajectories "
            f"of n_steps={n_steps} from start={start} with gap={gap} (the last frame would be "
            f"{last})"
        )
    states = run.states
    out = np.empty((count, n_steps + 1, 4))
    for k in range(count):
        first = start + k * stride
        out[k] = states[first : first + n_steps + 1]
        out[k, 0] = start_state(run.angles, first)
    return _whole_turns(out)


def _whole_turns(trajectories: np.ndarray) -> np.ndarray:
    """Shift each trajectory's angles by whole turns so that its row 0 lies in [−π, π)."""
    turns = np.floor((trajectories[:, :1, :2] + math.pi) / (2 * math.pi))
    trajectories[:, :, :2] -= 2 * math.pi * turns
    return trajectories


# -- the simulated stand-in -----------------------------------------------------------------------


def _check_theta(theta: Any) -> dict[str, float]:
    names = tuple(REAL_LIMITS)
    if theta is None:
        return dict(STAND_IN_THETA)
    if isinstance(theta, Mapping):
        unknown = [k for k in theta if k not in names]
        if unknown:
            raise ValueError(f"theta names unknown parameters {unknown}; known: {names}")
        values = {**STAND_IN_THETA, **theta}
        array = check_array("theta", [values[n] for n in names], shape=(len(names),))
    else:
        array = check_array("theta", theta, shape=(len(names),))
    return dict(zip(names, (float(a) for a in array), strict=True))


def _check_run_numbers(run_numbers: Any) -> tuple[int, ...]:
    if isinstance(run_numbers, str | bytes) or not isinstance(run_numbers, Sequence):
        raise TypeError(f"run_numbers must be a sequence of run numbers, got {run_numbers!r}")
    numbers = tuple(check_count("run_numbers", n, minimum=0) for n in run_numbers)
    if not numbers or len(set(numbers)) != len(numbers):
        raise ValueError(f"run_numbers must be distinct and not empty, got {run_numbers!r}")
    return numbers


def stand_in(
    run_numbers: Sequence[int],
    n_steps: int,
    count: int,
    seed: int = 0,
    theta: Mapping[str, float] | Sequence[float] | None = None,
) -> dict[int, np.ndarray]:
    """Simulated trajectories in place of the real runs, for when the data are absent.

    For each run number, ``count`` trajectories (count, n_steps + 1, 4) that look like
    :func:`segments` of a real run: start states like a real run's (``q0`` uniform in
    [−1, 1] rad, ``q1`` in [−π, π], both velocities in [−10, 10] rad/s), simulated by the
    11-parameter :class:`~physid.inference.pendulum.DoublePendulum` at :data:`DT` and ``theta``
    (a mapping overriding :data:`STAND_IN_THETA`, or the 11 values in the order of
    :data:`~physid.inference.pendulum.REAL_LIMITS`; default :data:`STAND_IN_THETA`), with
    Gaussian noise of :data:`STAND_IN_NOISE` rad on the angles, from which the velocities are
    recomputed by :func:`velocities` and row 0 by :func:`start_state`, as for the data.

    Like :func:`segments`, each trajectory's angles are shifted by whole turns to start in
    [−π, π). Each run number draws from its own generator seeded by ``(seed, number)``, so its
    trajectories do not depend on which other runs are asked for. This exists so that a
    chapter can run where the data set is not installed; it is not data, and the chapter must
    say so.
    """
    numbers = _check_run_numbers(run_numbers)
    n_steps = check_count("n_steps", n_steps)
    count = check_count("count", count)
    seed = check_seed("seed", seed)
    values = _check_theta(theta)
    model = DoublePendulum(names=tuple(REAL_LIMITS), dt=DT, compiled=False)
    theta_tensor = torch.tensor([values[n] for n in model.names], dtype=torch.float64)
    model.check_theta(theta_tensor)
    frames = n_steps + 1 + 2 * _LEAD
    out = {}
    for number in numbers:
        rng = np.random.default_rng([seed, number])
        s0 = np.column_stack(
            (
                rng.uniform(-1.0, 1.0, count),
                rng.uniform(-math.pi, math.pi, count),
                rng.uniform(-10.0, 10.0, (count, 2)),
            )
        )
        with torch.no_grad():
            path = model.simulate(theta_tensor, torch.from_numpy(s0), frames - 1).numpy()
        angles = np.concatenate((s0[:, None, :2], path[..., :2]), axis=1)
        angles = angles + rng.normal(0.0, STAND_IN_NOISE, angles.shape)
        trajectories = np.empty((count, n_steps + 1, 4))
        for k in range(count):
            states = np.concatenate((angles[k], velocities(angles[k])), axis=1)
            trajectories[k] = states[_LEAD : _LEAD + n_steps + 1]
            trajectories[k, 0] = start_state(angles[k], _LEAD)
        out[number] = _whole_turns(trajectories)
    return out


# -- the experiment's data ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class RealData:
    """The reference and held-out test trajectories of the real-data experiment.

    Args:
        reference: the one reference trajectory (1, n_steps + 1, 4).
        tests: the held-out test trajectories (n_tests, n_steps + 1, 4), one per run.
        real: True for the IBM data, False for the simulated stand-in (:func:`stand_in`).
        source: a description: the runs and frames, or that it is a simulated stand-in.
        runs: the run numbers, the reference run's first and then one per test trajectory.
        start: the frame at which every trajectory starts (in its run).
    """

    reference: np.ndarray
    tests: np.ndarray
    real: bool
    source: str
    runs: tuple[int, ...]
    start: int

    @property
    def reference_run(self) -> int:
        """The run of the reference trajectory."""
        return self.runs[0]

    @property
    def test_runs(self) -> tuple[int, ...]:
        """The runs of the test trajectories, in order."""
        return self.runs[1:]


def _span(numbers: Sequence[int]) -> str:
    """Run numbers as ranges, e.g. ``3–12, 15``."""
    parts: list[str] = []
    numbers = list(numbers)
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1] == numbers[j] + 1:
            j += 1
        parts.append(str(numbers[i]) if i == j else f"{numbers[i]}–{numbers[j]}")
        i = j + 1
    return ", ".join(parts)


def real_data(
    n_steps: int,
    n_tests: int = 10,
    reference_run: int = 2,
    start: int = START,
    directory: str | Path | None = None,
    seed: int = 0,
) -> RealData:
    """One reference trajectory and ``n_tests`` held-out ones, from the data or a stand-in.

    As in the paper, all come from the same pendulum: the reference is the trajectory of
    ``n_steps`` steps from frame ``start`` of ``reference_run``, and each test trajectory the
    same frames of one other run. The test runs are taken in order from
    :data:`SHARED_CAMERA_RUNS` (same camera position, hence the same pixel scale, as the
    default reference run 2) and only then from runs 0 and 1; with the defaults they are runs
    3–12. ``start`` defaults to frame 400 (:data:`START`), one second in, after the hand
    launch. Row 0 of each trajectory is the estimated :func:`start_state`, the others the
    measured angles and central-difference velocities (:func:`segments`).

    Where no data folder is found (``directory`` None and :func:`data_dir` None) the
    trajectories are :func:`stand_in` simulations for the same run numbers (drawn with
    ``seed``, which the real data ignore), and ``real`` is False.
    """
    n_steps = check_count("n_steps", n_steps)
    start = check_count("start", start, minimum=0)
    seed = check_seed("seed", seed)
    reference_run = _check_run_number(reference_run)
    folder = _check_directory(directory)
    present = available_runs(folder) if folder is not None else PROJECT_RUNS
    if reference_run not in present:
        raise ValueError(f"reference_run must be one of the runs {present}, got {reference_run!r}")
    others = [r for r in present if r != reference_run]
    others.sort(key=lambda r: (r not in SHARED_CAMERA_RUNS, r))
    n_tests = check_count("n_tests", n_tests, minimum=1, maximum=len(others))
    runs = (reference_run, *others[:n_tests])
    if folder is None:
        simulated = stand_in(runs, n_steps, 1, seed=seed)
        trajectories = [simulated[r][0] for r in runs]
        source = (
            f"simulated stand-in (no IBM data found; seed {seed}) for runs {reference_run} "
            f"(reference) and {_span(sorted(runs[1:]))} (tests)"
        )
    else:
        trajectories = [segments(load_run(r, folder), n_steps, 1, start=start)[0] for r in runs]
        source = (
            f"IBM runs {reference_run} (reference) and {_span(sorted(runs[1:]))} (tests), "
            f"frames {start}–{start + n_steps}"
        )
    return RealData(
        reference=np.stack(trajectories[:1]),
        tests=np.stack(trajectories[1:]),
        real=folder is not None,
        source=source,
        runs=runs,
        start=start,
    )
