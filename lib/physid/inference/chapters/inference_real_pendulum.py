"""The real double pendulum of Heiden et al. (2022): 11 parameters from one recorded trajectory.

* :func:`real_problem`: the 11-parameter model (appendix Table 1 of the paper) at the camera's
  400 Hz, one reference trajectory and held-out test trajectories from other runs of the IBM
  recordings (:mod:`physid.inference.ibm`), or a simulated stand-in when the data is absent.
* :func:`evaluate`: first the prediction of the held-out runs (the angle RMSE of the particles'
  median rollout at the horizons :data:`HORIZONS`, and the energy score, a proper score of the
  whole set), then the paper's consistency metrics in trajectory space: the kNN estimates of
  ``KL(D_real ‖ D_sim)`` and ``KL(D_sim ‖ D_real)`` and the MMD between the held-out
  trajectories and the particles' rollouts from the same start states. A metric the particle
  set cannot give (a collapsed set, unstable rollouts) is ``nan``, shown as "N/A" as in the
  paper.
* :func:`compare`: every estimator on single and on multiple shooting (Tables I and II), one
  ``joblib`` / Dask job each (:func:`physid.core.sweeps.run_jobs`), cached on disk.
* :func:`bayessim_variants`: BayesSim on the input statistics the paper's appendix compares.
* :func:`baselines`: the prior's mean and draws from the prior, scored like the estimators.
* :func:`spread_test`: one particle set widened about its mean, to show what each metric
  rewards.
* :func:`symmetries`: which combinations of the 11 parameters the reference can tell apart.

Multiple shooting starts its shooting states on the reference's recorded states
(:data:`SHOOTING_START`), as multiple shooting usually does; ``start="rollout"`` in
:func:`run_estimator` starts them on each particle's own rollout instead (the ablation).

Sizes per scale are in :data:`SIZES`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from physid.core.scales import Sizes, SizeTable, expect_sizes
from physid.core.sweeps import cached, run_jobs
from physid.core.target import Limits
from physid.core.threads import one_torch_thread
from physid.core.validate import (
    check_array,
    check_choice,
    check_choices,
    check_count,
    check_number,
    check_seed,
)
from physid.inference import ibm
from physid.inference.chapters.inference_synthetic import estimator_settings
from physid.inference.estimators import make_estimator
from physid.inference.likelihood import TrajectoryLikelihood
from physid.inference.metrics import energy_score, knn_kl, mmd
from physid.inference.pendulum import REAL_LIMITS, DoublePendulum

__all__ = [
    "DEFECT_FORM",
    "DEFECT_FORMS",
    "FAMILIES",
    "HORIZONS",
    "K_NEIGHBOURS",
    "PAPER_BAYESSIM",
    "PAPER_TABLE_II",
    "SHOOTINGS",
    "SHOOTING_START",
    "SHOOTING_STARTS",
    "SIGMA_DEF",
    "SIGMA_OBS",
    "SIZES",
    "Metrics",
    "RealProblem",
    "RealRun",
    "RealSizes",
    "Symmetries",
    "BASELINES",
    "SPREAD_FACTORS",
    "TDS_MAPPING",
    "TRACE_POINTS",
    "TRANSFER_SETUPS",
    "TransferSetup",
    "baselines",
    "bayessim_variants",
    "compare",
    "evaluate",
    "pendulum_model",
    "predictive",
    "prediction_rows",
    "real_limits",
    "real_problem",
    "run_estimator",
    "spread_test",
    "start_ablation",
    "symmetries",
    "transfer_study",
]

#: Observation noise of the likelihood, in standardised state units (as in the synthetic
#: chapter).
SIGMA_OBS = 0.1
#: The defect scale σ_def of multiple shooting (standardised units): σ_def² = 10⁻², the order
#: the paper gives for the samplers that see the defects through the likelihood.
SIGMA_DEF = 0.1
#: Neighbours of the kNN KL estimates (``k = l``).
K_NEIGHBOURS = 3
#: The shootings of Table II: single, and multiple with the chapter's windows.
SHOOTINGS = ("single", "multiple")
#: Where multiple shooting's states can start (:meth:`TrajectoryLikelihood.auxiliary
#: <physid.inference.likelihood.TrajectoryLikelihood.auxiliary>`).
SHOOTING_STARTS = ("recorded", "rollout")
#: Where the chapter starts them: on the reference's recorded states, the usual start of
#: multiple shooting.
SHOOTING_START = "recorded"
#: The forms of CSVGD's defect constraints
#: (:class:`~physid.inference.likelihood.TrajectoryLikelihood`'s ``defect_form``).
DEFECT_FORMS = ("squared", "vector")
#: The chapter's: the paper's ``‖s^s − s‖² / σ_def²`` per window boundary. On this pendulum the
#: signed per-entry form's multipliers do not settle (the chapter's ablation shows it).
DEFECT_FORM = "squared"
#: Our parameters on the Tiny Differentiable Simulator's compound pendulum (the paper's
#: simulator; checked in ``tests/inference/test_tds.py``): both joints turn about the link
#: frame's ``x`` axis, each link points along its frame's ``y``, gravity is ``−z``.
TDS_MAPPING: tuple[tuple[str, str, str], ...] = (
    ("l1", "link 2's X_T translation (0, l1, 0)", "the offset of joint 2 along link 1: the "
     "paper's “link 2 length”"),
    ("l2", "—", "the elbow-to-tip distance: no dynamics depend on it; drawn only"),
    ("m_i", "RigidBodyInertia mass", "the link's mass"),
    ("c_ix", "com.y", "the centre of mass along the link, from its joint towards the next"),
    ("c_iy", "com.z", "the centre of mass across the link, counter-clockwise (same sign)"),
    ("I_i", "inertia[0, 0] (I_xx)", "about the centre of mass and the joint axis x; I_yy, "
     "I_zz do not enter planar motion"),
    ("d_i", "TinyLink damping", "viscous: the joint torque loses d_i q̇_i"),
    ("q0, q1", "q[0] = q0 − π/2, q[1] = q1", "TDS's q = 0 points link 1 along +y"),
)
#: The prediction horizons (s) of the held-out angle RMSE.
HORIZONS = (0.1, 0.25, 1.0)
#: The rows of Table II: each family's estimator on single and on multiple shooting (SVGD on
#: multiple shooting is CSVGD, as in the paper).
FAMILIES: dict[str, tuple[str, str]] = {
    "Emcee": ("Emcee", "Emcee"),
    "CEM": ("CEM", "CEM"),
    "SGLD": ("SGLD", "SGLD"),
    "NUTS": ("NUTS", "NUTS"),
    "(C)SVGD": ("SVGD", "CSVGD"),
}
#: The paper's appendix Table 2: per family and shooting, ``(KL(real‖sim), KL(sim‖real),
#: MMD)``; ``None`` where the paper reports "N/A".
PAPER_TABLE_II: dict[str, dict[str, tuple[float | None, float | None, float | None]]] = {
    "Emcee": {"single": (8542.2466, 4060.6312, 1.1365), "multiple": (8950.4574, None, None)},
    "CEM": {"single": (8911.1798, 8549.5927, 0.9687), "multiple": (8860.5115, None, 0.5682)},
    "SGLD": {"single": (8788.0962, 7876.0310, 2.1220), "multiple": (5863.2728, 2187.2825, 0.0759)},
    "NUTS": {"single": (9196.7461, 6432.2131, 0.5371), "multiple": (8785.5326, 4935.8983, 1.1642)},
    "(C)SVGD": {
        "single": (8803.5683, 10283.6659, 0.7177),
        "multiple": (5204.5336, 2773.1751, 0.0366),
    },
}
#: The paper's BayesSim variants on the double pendulum (appendix, second Table 2): per input
#: statistic, the mixture density network's ``(KL(real‖sim), KL(sim‖real), MMD)``.
PAPER_BAYESSIM: dict[str, tuple[float, float, float]] = {
    "downsampled": (8817.9222, 4050.4666, 0.6748),
    "difference": (8919.2463, 4633.2637, 0.6285),
    "summary": (9092.5575, 5093.8851, 0.5664),
    "signature": (8985.8056, 4610.5438, 0.5807),
}


@dataclass(frozen=True)
class RealSizes(Sizes):
    """Run sizes of the real-pendulum experiment (see :data:`SIZES`).

    ``n_steps`` steps of 1/400 s per trajectory, ``windows`` shooting windows, ``n_particles``
    particles (Emcee raises its walkers to twice the dimension), ``iterations`` per estimator
    unless its registration sets its own, ``n_tests`` held-out trajectories, BayesSim's
    ``bayessim_simulations`` and ``bayessim_epochs``, ``n_jobs`` parallel jobs.
    """

    scale: str
    n_steps: int
    windows: int
    n_particles: int
    iterations: int
    record_every: int
    n_tests: int
    bayessim_simulations: int
    bayessim_epochs: int
    n_jobs: int = 1

    def check(self) -> None:
        if self.n_steps % self.windows:
            raise ValueError(
                f"windows must divide n_steps = {self.n_steps}, got windows = {self.windows}"
            )
        if self.n_tests < K_NEIGHBOURS + 1:
            raise ValueError(
                f"n_tests must be at least {K_NEIGHBOURS + 1} for the kNN estimates, "
                f"got {self.n_tests}"
            )


#: Sizes per scale. ``paper``: 100 particles, 2,000 iterations, 10 windows, 10 test
#: trajectories, BayesSim on 10,000 simulations for 3,000 epochs; ``default`` fits the chapter's
#: share on 2 cores.
SIZES = SizeTable(
    "inference_real",
    quick=RealSizes(
        scale="quick",
        n_steps=120,
        windows=4,
        n_particles=8,
        iterations=8,
        record_every=4,
        n_tests=10,
        bayessim_simulations=200,
        bayessim_epochs=8,
    ),
    default=RealSizes(
        scale="default",
        n_steps=400,
        windows=10,
        n_particles=48,
        iterations=600,
        record_every=20,
        n_tests=10,
        bayessim_simulations=2000,
        bayessim_epochs=300,
        n_jobs=2,
    ),
    paper=RealSizes(
        scale="paper",
        n_steps=400,
        windows=10,
        n_particles=100,
        iterations=2000,
        record_every=50,
        n_tests=10,
        bayessim_simulations=10000,
        bayessim_epochs=3000,
        n_jobs=2,
    ),
)


def pendulum_model() -> DoublePendulum:
    """The 11-parameter double pendulum of the paper at the camera's rate (the elbow-to-tip
    length ``l2``, which no dynamics depend on, fixed)."""
    return DoublePendulum(names=tuple(REAL_LIMITS), dt=ibm.DT)


def real_limits() -> Limits:
    """The paper's limits of the 11 parameters (appendix Table 1), also the prior."""
    return Limits.from_dict(REAL_LIMITS)


@dataclass(frozen=True)
class RealProblem:
    """The model, the limits, one reference trajectory (1, T+1, 4) and held-out tests."""

    model: DoublePendulum
    limits: Limits
    reference: np.ndarray
    tests: np.ndarray
    source: str
    real: bool
    runs: tuple[int, ...]

    def target(
        self,
        windows: int = 1,
        defects: str = "likelihood",
        start: str = SHOOTING_START,
        form: str = DEFECT_FORM,
    ) -> TrajectoryLikelihood:
        """The likelihood of the reference: single shooting, or ``windows`` windows with the
        defects as constraints (of the form ``form``, :data:`DEFECT_FORMS`) or in the density
        (Eq. inf-ms), the shooting states starting at ``start`` (:data:`SHOOTING_STARTS`)."""
        return TrajectoryLikelihood(
            self.model,
            self.reference,
            self.limits,
            sigma_obs=SIGMA_OBS,
            shooting_windows=windows,
            defects=defects,
            sigma_def=SIGMA_DEF,
            shooting_start=check_choice("start", start, SHOOTING_STARTS),
            defect_form=check_choice("form", form, DEFECT_FORMS),
        )

    def test_target(self) -> TrajectoryLikelihood:
        """A likelihood of the held-out trajectories, standardised like the reference: its
        rollouts start from each test's start state."""
        scale = self.target()
        return TrajectoryLikelihood(
            self.model,
            self.tests,
            self.limits,
            sigma_obs=SIGMA_OBS,
            state_scale=(scale.state_mean.numpy(), scale.state_std.numpy()),
        )


def real_problem(s: RealSizes, seed: int = 0) -> RealProblem:
    """The reference and test trajectories of ``s.n_steps`` steps (real data when present,
    else the simulated stand-in drawn with ``seed``), each starting within (−π, π]."""
    s = expect_sizes(s, RealSizes)
    data = ibm.real_data(s.n_steps, n_tests=s.n_tests, seed=check_seed("seed", seed))
    return RealProblem(
        pendulum_model(),
        real_limits(),
        data.reference,
        data.tests,
        data.source,
        data.real,
        tuple(data.runs),
    )


@dataclass(frozen=True)
class TransferSetup:
    """A variation of the fit, to measure what makes it carry over to other runs.

    ``seconds``: the reference's length as a multiple of the chapter's (from the same frame
    of the same run); ``window_factor``: the shooting windows' length as a multiple of the
    chapter's; ``inertia_floor``: the lower limit of both inertias (kg m²; ``None``: the
    paper's). The held-out trajectories, and the scale they are scored in, stay the chapter's.
    """

    name: str
    seconds: float = 1.0
    window_factor: float = 1.0
    inertia_floor: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty string, got {self.name!r}")
        check_number("seconds", self.seconds, low=0.0, low_open=True)
        check_number("window_factor", self.window_factor, low=0.0, low_open=True)
        if self.inertia_floor is not None:
            check_number("inertia_floor", self.inertia_floor, low=0.0, low_open=True)

    def steps(self, s: RealSizes) -> int:
        """The reference's steps at sizes ``s``."""
        steps = self.seconds * s.n_steps
        if abs(steps - round(steps)) > 1e-9 or round(steps) < 1:
            raise ValueError(f"seconds = {self.seconds} gives {steps} steps at {s.scale}")
        return int(round(steps))

    def windows(self, s: RealSizes) -> int:
        """The shooting windows at sizes ``s``: the reference's steps over the windows'."""
        length = self.window_factor * s.n_steps / s.windows
        windows = self.steps(s) / length
        if abs(windows - round(windows)) > 1e-9 or self.steps(s) % round(windows):
            raise ValueError(
                f"setup {self.name!r}: windows of {length:g} steps do not divide the "
                f"{self.steps(s)} steps of the reference at {s.scale}"
            )
        return int(round(windows))

    def problems(
        self, problem: RealProblem, s: RealSizes, seed: int
    ) -> tuple[RealProblem, RealProblem]:
        """The problem to score on (the chapter's trajectories, this setup's limits) and the
        one to fit (this setup's reference and limits)."""
        limits = REAL_LIMITS
        if self.inertia_floor is not None:
            limits = {
                name: (self.inertia_floor, high) if name in ("I1", "I2") else (low, high)
                for name, (low, high) in REAL_LIMITS.items()
            }
        scored = replace(problem, limits=Limits.from_dict(limits))
        steps = self.steps(s)
        if steps == s.n_steps:
            return scored, scored
        reference = ibm.real_data(steps, n_tests=1, seed=seed).reference
        return scored, replace(scored, reference=reference)


#: The fits of the transfer study (:func:`transfer_study`): the chapter's, shorter and longer
#: windows, a shorter and a longer reference (windows of the chapter's length), and a ten
#: times lower floor under the inertias.
TRANSFER_SETUPS: tuple[TransferSetup, ...] = (
    TransferSetup("the chapter's"),
    TransferSetup("windows half as long", window_factor=0.5),
    TransferSetup("windows twice as long", window_factor=2.0),
    TransferSetup("half the reference", seconds=0.5),
    TransferSetup("twice the reference", seconds=2.0),
    TransferSetup("inertia floor ÷ 10", inertia_floor=REAL_LIMITS["I1"][0] / 10),
)


def transfer_study(
    s: RealSizes,
    estimator: str = "CSVGD",
    setups: tuple[TransferSetup, ...] = TRANSFER_SETUPS,
    seed: int = 0,
    scheduler: object = None,
) -> list[RealRun]:
    """``estimator`` on multiple shooting under each of ``setups``, scored on the chapter's
    held-out trajectories: what makes the fit carry over to the other runs."""
    s = expect_sizes(s, RealSizes)
    if isinstance(setups, TransferSetup) or not setups:
        raise ValueError(f"setups must be a non-empty sequence of TransferSetup, got {setups!r}")
    for setup in setups:
        if not isinstance(setup, TransferSetup):
            raise TypeError(f"setups must hold TransferSetup, got {setup!r}")
        setup.windows(s)
    jobs = [
        {
            "name": estimator,
            "shooting": "multiple",
            "s": s,
            "seed": check_seed("seed", seed),
            "family": setup.name,
            "setup": setup,
        }
        for setup in setups
    ]
    return run_jobs(run_estimator, jobs, s.n_jobs, scheduler, desc="transfer")


@dataclass(frozen=True)
class Symmetries:
    """What the reference trajectory can tell apart (:func:`symmetries`).

    ``singular_values`` (points, 11): the singular values of the Jacobian of the standardised
    rollout with respect to the normalised parameters at each point, divided by the largest;
    ``rank``: the count above ``tolerance`` at every point; ``null_share`` (11,): the largest
    weight (absolute component) of each parameter in the Jacobian's null directions over the
    points (0: the parameter is identifiable to first order).
    """

    names: tuple[str, ...]
    points: np.ndarray
    singular_values: np.ndarray
    rank: int
    null_share: np.ndarray
    tolerance: float


def symmetries(
    problem: RealProblem, n_points: int = 3, seed: int = 0, tolerance: float = 1e-10
) -> Symmetries:
    """The rank of the map from the 11 parameters to the reference's rollout, at ``n_points``
    points drawn uniformly inside the limits with ``seed``.

    The dynamics depend on the parameters only through ``M11 = m1|c1|² + I1 + m2 l1²``,
    ``M22 = m2|c2|² + I2``, ``l1``, ``m1 c1``, ``m2 c2`` and the frictions, up to one common
    factor (:meth:`~physid.inference.pendulum.DoublePendulum.constants`): eight combinations of
    eleven parameters. The Jacobian's rank measures that, and its null directions name the
    parameters that share the symmetries.
    """
    n_points = check_count("n_points", n_points)
    seed = check_seed("seed", seed)
    tolerance = check_number("tolerance", tolerance, low=0.0, low_open=True)
    target = problem.target()
    generator = torch.Generator().manual_seed(seed)
    points = torch.rand(n_points, target.n_params, generator=generator, dtype=torch.float64)
    start = target.data[0, 0]

    def rollout(z: torch.Tensor) -> torch.Tensor:
        theta = target.limits.denormalise(z[None])[0]
        states = problem.model.simulate_autograd(theta, start, target.n_steps)
        return target.standardise(states).flatten()

    values, shares = [], np.zeros(target.n_params)
    for z in points:
        jacobian = torch.autograd.functional.jacobian(
            rollout, z, strategy="forward-mode", vectorize=True
        ).numpy()
        _, sv, vt = np.linalg.svd(jacobian, full_matrices=True)
        values.append(sv / sv[0])
        null = vt[int((sv / sv[0] > tolerance).sum()) :]
        if len(null):
            shares = np.maximum(shares, np.abs(null).max(0))
    values = np.array(values)
    return Symmetries(
        target.limits.names,
        target.limits.denormalise(points).numpy(),
        values,
        int((values > tolerance).sum(1).min()),
        shares,
        tolerance,
    )


@dataclass(frozen=True)
class Metrics:
    """How a particle set predicts the held-out trajectories (``nan``: not computable, "N/A").

    Per horizon of :data:`HORIZONS` (``nan`` beyond the trajectories' length), over the frames
    up to it and averaged over the held-out starts: ``rmse``, the angle RMSE (rad) of the
    particles' median rollout (per frame and joint); ``energy``, the energy score (rad,
    :func:`~physid.inference.metrics.energy_score`) of the particles' angle trajectories. Then the
    paper's ``KL(real‖sim)``, ``KL(sim‖real)`` and MMD; the count of unstable rollouts and of
    distinct particles.
    """

    kl_real_sim: float
    kl_sim_real: float
    mmd: float
    unstable: int
    distinct: int
    rmse: tuple[float, ...] = ()
    energy: tuple[float, ...] = ()

    def as_row(self) -> tuple[float, float, float]:
        """``(KL(real‖sim), KL(sim‖real), MMD)``."""
        return self.kl_real_sim, self.kl_sim_real, self.mmd


def predictive(problem: RealProblem, theta: np.ndarray) -> np.ndarray:
    """Rollouts (N, n_tests, T+1, 4) of the particles ``theta`` (N, 11) (clipped into the
    limits) from the start state of every held-out trajectory."""
    theta = check_array("theta", theta, shape=(None, problem.limits.dim))
    clipped = np.clip(theta, problem.limits.lower, problem.limits.upper)
    return problem.test_target().rollouts(torch.as_tensor(clipped)).numpy()


def _prediction(
    sims: np.ndarray, real: np.ndarray, dt: float
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The held-out angle RMSE and energy score per horizon of finite rollouts ``sims``
    (N, n_tests, T+1, 4) against ``real`` (n_tests, T+1, 4)."""
    angles, truth = sims[..., 1:, :2], real[:, 1:, :2]
    median = np.median(angles, axis=0)
    rmse, energy = [], []
    for horizon in HORIZONS:
        frames = int(round(horizon / dt))
        if frames > truth.shape[1]:
            rmse.append(math.nan)
            energy.append(math.nan)
            continue
        error = (median[:, :frames] - truth[:, :frames]) ** 2
        rmse.append(float(np.sqrt(error.mean((1, 2))).mean()))
        scores = [energy_score(angles[:, k, :frames], truth[k, :frames]) for k in range(len(truth))]
        energy.append(float(np.mean(scores)))
    return tuple(rmse), tuple(energy)


def evaluate(problem: RealProblem, theta: np.ndarray) -> Metrics:
    """The prediction of the held-out trajectories and the paper's metrics between them and
    the particles' rollouts.

    The prediction (:class:`Metrics`) is in radians, on the angles as recorded. For the
    paper's metrics, trajectories are standardised per state dimension like the likelihood and
    flattened (``4(T+1)`` dimensions). ``KL(D_real ‖ D_sim)`` and ``KL(D_sim ‖ D_real)`` are
    the kNN estimates (:func:`~physid.inference.metrics.knn_kl`, ``k = l = 3``) between the
    ``n_tests`` real trajectories and the ``N · n_tests`` simulated ones; the MMD is the RBF
    estimate with the median bandwidth. Rollouts that blow up are dropped and counted; a set
    with fewer than ``k + 1`` distinct finite rollouts (a collapsed particle set, or one
    particle) has no ``KL(D_sim ‖ D_real)``, and one without finite rollouts has no metric at
    all.
    """
    theta = check_array("theta", theta, shape=(None, problem.limits.dim))
    target = problem.test_target()
    raw = predictive(problem, theta)
    finite = np.isfinite(raw).all(axis=(2, 3))  # (N, n_tests)
    particles_ok = finite.all(1)
    unstable = int((~particles_ok).sum())
    distinct = len(np.unique(np.round(theta[particles_ok], 12), axis=0))
    if not particles_ok.any():
        return Metrics(math.nan, math.nan, math.nan, unstable, distinct)
    rmse, energy = _prediction(raw[particles_ok], problem.tests, problem.model.dt)
    sims = target.standardise(torch.as_tensor(raw[particles_ok])).numpy()
    real = target.standardise(torch.as_tensor(problem.tests)).numpy()
    sim = sims.reshape(-1, *sims.shape[2:])
    kl_rs = knn_kl(real, sim, K_NEIGHBOURS, K_NEIGHBOURS)
    kl_sr = (
        knn_kl(sim, real, K_NEIGHBOURS, K_NEIGHBOURS)
        if distinct >= K_NEIGHBOURS + 1
        else math.nan
    )
    distance = mmd(sim.reshape(len(sim), -1), real.reshape(len(real), -1))
    return Metrics(kl_rs, kl_sr, distance, unstable, distinct, rmse, energy)


@dataclass
class RealRun:
    """One estimator's run on the reference: its final particles (physical units), the
    metrics, the time it took and what it reports of itself (``diagnostics``, with
    ``"trace"``: the reference's log-likelihood and the RMS defect during the run, see
    :data:`TRACE_POINTS`); ``start``: where its shooting states started (``""`` for single
    shooting and the baselines); ``form``: the form of its defect constraints (``""`` where
    it has none)."""

    family: str
    estimator: str
    shooting: str
    seed: int
    seconds: float
    iterations: int
    theta: np.ndarray
    metrics: Metrics
    loglik: float
    diagnostics: dict = field(default_factory=dict)
    start: str = ""
    form: str = ""

    @property
    def ablated(self) -> bool:
        """Whether the run starts its shooting states or forms its defect constraints
        otherwise than the chapter's runs (:data:`SHOOTING_START`, :data:`DEFECT_FORM`): an
        ablation."""
        return self.start not in ("", SHOOTING_START) or self.form not in ("", DEFECT_FORM)


#: The points of a run at which :func:`run_estimator` records its trace.
TRACE_POINTS = 10


def _trace(problem: RealProblem, target: TrajectoryLikelihood, history: object) -> dict:
    """At each recorded iteration of ``history``: the mean per-observation log-likelihood of
    the reference by single shooting (the parameters clipped into the limits) and the median
    RMS defect (:meth:`~physid.inference.likelihood.TrajectoryLikelihood.defect_rms`, 0 on
    single shooting): whether the run has converged."""
    reference = problem.target()
    loglik, defects = [], []
    for particles in history.particles:
        x = torch.as_tensor(particles)
        theta = target.parameters(x).numpy()
        clipped = np.clip(theta, problem.limits.lower, problem.limits.upper)
        loglik.append(reference.mean_log_likelihood(torch.as_tensor(clipped)).nanmean().item())
        defects.append(target.defect_rms(x).nanmedian().item())
    return {
        "iterations": np.array(history.iterations),
        "loglik": np.array(loglik),
        "defect_rms": np.array(defects),
    }


def _recordings(*args: object, **kwargs: object) -> tuple[Path, ...]:
    """The recordings a run reads (:func:`physid.inference.ibm.data_files`): none for the
    simulated stand-in."""
    return ibm.data_files()


@cached(reads=_recordings)
def _run(
    family: str,
    name: str,
    shooting: str,
    sizes: dict,
    seed: int,
    iterations: int | None,
    options: dict,
    start: str,
    variant: dict,
    form: str,
) -> RealRun:
    s = RealSizes(**sizes)
    settings = estimator_settings(name, s, shooting)
    iterations = settings.iterations if iterations is None else iterations
    setup = TransferSetup(**variant) if variant else None
    with one_torch_thread():
        problem = real_problem(s, seed)
        windows = settings.windows
        if setup is not None:
            problem, fit = setup.problems(problem, s, seed)
            windows = setup.windows(s) if settings.windows > 1 else 1
        else:
            fit = problem
        target = fit.target(windows, **settings.target, start=start, form=form)
        estimator = make_estimator(
            name, target, n_particles=s.n_particles, seed=seed, **{**settings.options, **options}
        )
        history = estimator.run(
            iterations, record_every=max(1, iterations // TRACE_POINTS), progress=False
        )
        trace = _trace(problem, target, history)
        theta = target.parameters(torch.as_tensor(history.particles[-1])).numpy()
        metrics = evaluate(problem, theta)
        loglik = float(trace["loglik"][-1])
    return RealRun(
        family,
        name,
        shooting,
        seed,
        float(history.seconds[-1]),
        iterations,
        theta,
        metrics,
        loglik,
        {**estimator.diagnostics(), "trace": trace},
        start if shooting == "multiple" else "",
        form if settings.target.get("defects") == "constraint" and windows > 1 else "",
    )


def run_estimator(
    name: str,
    shooting: str,
    s: RealSizes,
    seed: int = 0,
    family: str | None = None,
    iterations: int | None = None,
    start: str = SHOOTING_START,
    setup: TransferSetup | None = None,
    form: str = DEFECT_FORM,
    **options: object,
) -> RealRun:
    """Run estimator ``name`` on ``"single"`` or ``"multiple"`` shooting of the reference and
    evaluate it on the held-out trajectories.

    ``family`` labels the run (default: ``name``); ``iterations`` overrides the registered run
    length; ``start`` is where multiple shooting's states start (:data:`SHOOTING_STARTS`);
    ``form`` is the form of CSVGD's defect constraints (:data:`DEFECT_FORMS`);
    ``setup`` fits another reference, windows or inertia floor (:class:`TransferSetup`; the
    held-out trajectories stay the chapter's); ``options`` go to the estimator. One thread;
    cached on disk by all of these, the recordings read (or that there were none), the
    library's code and the package versions (:func:`physid.core.sweeps.cached`).
    """
    s = expect_sizes(s, RealSizes)
    shooting = check_choice("shooting", shooting, SHOOTINGS)
    estimator_settings(name, s, shooting)  # checks the name before any work
    if iterations is not None:
        iterations = check_count("iterations", iterations)
    family = name if family is None else family
    if not isinstance(family, str):
        raise TypeError(f"family must be a string, got {family!r}")
    start = check_choice("start", start, SHOOTING_STARTS)
    form = check_choice("form", form, DEFECT_FORMS)
    if setup is not None:
        if not isinstance(setup, TransferSetup):
            raise TypeError(f"setup must be a TransferSetup, got {setup!r}")
        setup.windows(s)  # checks that the windows divide the reference, before any work
    return _run(
        family,
        name,
        shooting,
        asdict(s),
        check_seed("seed", seed),
        iterations,
        dict(options),
        start,
        {} if setup is None else asdict(setup),
        form,
    )


def compare(
    s: RealSizes,
    families: tuple[str, ...] = tuple(FAMILIES),
    shootings: tuple[str, ...] = SHOOTINGS,
    seed: int = 0,
    scheduler: object = None,
) -> list[RealRun]:
    """Every family's estimator on every shooting (Table II), one job each, in job order."""
    s = expect_sizes(s, RealSizes)
    families = check_choices("families", families, tuple(FAMILIES))
    shootings = check_choices("shootings", shootings, SHOOTINGS)
    seed = check_seed("seed", seed)
    jobs = [
        {
            "name": FAMILIES[f][SHOOTINGS.index(sh)],
            "shooting": sh,
            "s": s,
            "seed": seed,
            "family": f,
        }
        for f in families
        for sh in shootings
    ]
    return run_jobs(run_estimator, jobs, s.n_jobs, scheduler, desc="real pendulum")


def bayessim_variants(
    s: RealSizes,
    statistics: tuple[str, ...] = tuple(PAPER_BAYESSIM),
    seed: int = 0,
    scheduler: object = None,
) -> list[RealRun]:
    """BayesSim (the mixture density network) on each input statistic of ``statistics``."""
    s = expect_sizes(s, RealSizes)
    statistics = check_choices("statistics", statistics, tuple(PAPER_BAYESSIM))
    jobs = [
        {
            "name": "BayesSim",
            "shooting": "single",
            "s": s,
            "seed": check_seed("seed", seed),
            "family": f"BayesSim ({st})",
            "iterations": s.bayessim_epochs,
            "statistic": st,
            "n_simulations": s.bayessim_simulations,
        }
        for st in statistics
    ]
    return run_jobs(run_estimator, jobs, s.n_jobs, scheduler, desc="BayesSim inputs")


def start_ablation(
    s: RealSizes,
    families: tuple[str, ...] = ("SGLD",),
    seed: int = 0,
    scheduler: object = None,
) -> list[RealRun]:
    """Each family's multiple-shooting estimator with its shooting states started on its
    particles' own rollouts (``start="rollout"``) instead of the recorded states: what the
    start decides."""
    s = expect_sizes(s, RealSizes)
    families = check_choices("families", families, tuple(FAMILIES))
    jobs = [
        {
            "name": FAMILIES[f][1],
            "shooting": "multiple",
            "s": s,
            "seed": check_seed("seed", seed),
            "family": f,
            "start": "rollout",
        }
        for f in families
    ]
    return run_jobs(run_estimator, jobs, s.n_jobs, scheduler, desc="shooting starts")


#: The baselines scored beside the estimators: the centre of the limits (the prior's mean) and
#: draws from the prior (uniform in the limits).
BASELINES = ("prior mean", "prior draws")


def baselines(s: RealSizes, seed: int = 0) -> list[RealRun]:
    """The trivial baselines of :data:`BASELINES`, scored like an estimator's particles: the
    prior's mean (one particle) and ``s.n_particles`` uniform draws from the limits with
    ``seed``. What an estimator must beat."""
    s = expect_sizes(s, RealSizes)
    problem = real_problem(s, check_seed("seed", seed))
    limits = problem.limits
    rng = np.random.default_rng([seed, 22])
    sets = {
        "prior mean": (0.5 * (limits.lower + limits.upper))[None],
        "prior draws": limits.lower + limits.width * rng.random((s.n_particles, limits.dim)),
    }
    runs = []
    with one_torch_thread():
        reference = problem.target()
        for name, theta in sets.items():
            loglik = reference.mean_log_likelihood(torch.as_tensor(theta)).nanmean().item()
            runs.append(
                RealRun(name, "prior", "none", seed, 0.0, 0, theta, evaluate(problem, theta),
                        float(loglik))
            )
    return runs


#: The factors by which :func:`spread_test` widens a particle set about its mean.
SPREAD_FACTORS = (0.0, 1.0, 2.0, 4.0)


def spread_test(
    problem: RealProblem, theta: np.ndarray, factors: tuple[float, ...] = SPREAD_FACTORS
) -> list[Metrics]:
    """The metrics of ``theta`` (N, 11) widened about its mean by each factor of ``factors``
    (``mean + f (θ − mean)``, clipped into the limits; 0: every particle at the mean). A
    metric that improves as the set widens while the prediction worsens rewards spread, not
    accuracy."""
    theta = check_array("theta", theta, shape=(None, problem.limits.dim))
    if isinstance(factors, str) or not factors:
        raise ValueError(f"factors must be a non-empty sequence of numbers, got {factors!r}")
    factors = tuple(check_number("factors", f, low=0.0) for f in factors)
    mean = theta.mean(0)
    widened = [
        np.clip(mean + f * (theta - mean), problem.limits.lower, problem.limits.upper)
        for f in factors
    ]
    with one_torch_thread():
        return [evaluate(problem, w) for w in widened]


def _label(run: RealRun) -> tuple[str, str]:
    """A run's row label: the estimator (or baseline) and its shooting, with the start of
    multiple shooting's states when it is not the chapter's."""
    name = run.family if run.estimator in ("prior", "BayesSim") else run.estimator
    shooting = "—" if run.shooting == "none" else run.shooting
    if run.start and run.start != SHOOTING_START:
        shooting += f" ({run.start} start)"
    if run.form and run.form != DEFECT_FORM:
        shooting += f" ({run.form} defects)"
    return name, shooting


def prediction_rows(runs: list[RealRun]) -> list[dict[str, object]]:
    """Table rows of how each of ``runs`` predicts the held-out trajectories: the angle RMSE
    at every horizon of :data:`HORIZONS`, the energy score at the last two, and the
    per-observation log-likelihood of the reference (``nan`` where not computable)."""
    rows = []
    for run in runs:
        name, shooting = _label(run)
        row: dict[str, object] = {"particles": name, "shooting": shooting}
        for horizon, value in zip(HORIZONS, run.metrics.rmse or (math.nan,) * 3, strict=True):
            row[f"RMSE {horizon:g} s"] = value
        for horizon, value in list(
            zip(HORIZONS, run.metrics.energy or (math.nan,) * 3, strict=True)
        )[1:]:
            row[f"energy {horizon:g} s"] = value
        row["log-lik. / obs."] = run.loglik
        rows.append(row)
    return rows
