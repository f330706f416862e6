"""The synthetic experiments of Part II, chapter 3, and their sizes.

* :func:`synthetic_problem`: a point-mass double pendulum whose two link lengths are drawn from a
  known, elongated 2-D Gaussian around (1.5 m, 2.0 m); the prior is U[0.5, 5] m on both.
* :func:`compare_estimators`: every estimator on it, through ``joblib`` (one job per estimator
  and seed), with the parameter KL, the trajectory MMD and the log-likelihood per snapshot.
* :func:`likelihood_landscape`: the log-likelihood over a grid of link lengths for single and
  multiple shooting.
* :func:`multimodal_experiment`: two references from two parameter settings; CSVGD with the
  product against the sum (mixture) likelihood (Fig. 6 of the paper).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from physid.inference.estimators import make_estimator
from physid.inference.likelihood import Limits, TrajectoryLikelihood
from physid.inference.metrics import knn_kl, mmd
from physid.inference.pendulum import SIDEWAYS, DoublePendulum
from physid.scales import select


@dataclass(frozen=True)
class Sizes:
    """Run sizes of the chapter (see :data:`SIZES`)."""

    n_particles: int
    iterations: int
    record_every: int
    n_references: int
    n_steps: int
    windows: int
    truth_samples: int
    nuts_iterations: int
    nuts_warmup: int
    nuts_tree_depth: int
    bayessim_simulations: int
    bayessim_epochs: int
    multimodal_iterations: int
    multimodal_steps: int
    landscape_points: int
    seeds: tuple[int, ...] = (0,)
    n_jobs: int = 1
    compiled: bool = True


#: Sizes per scale. ``paper`` has 100 particles and 2,000 iterations as in the paper, 10,000
#: BayesSim simulations and 3,000 epochs; ``default`` fits in minutes on 2 cores.
SIZES: dict[str, Sizes] = {
    "quick": Sizes(
        n_particles=16,
        iterations=12,
        record_every=4,
        n_references=4,
        n_steps=60,
        windows=5,
        truth_samples=200,
        nuts_iterations=6,
        nuts_warmup=3,
        nuts_tree_depth=3,
        bayessim_simulations=200,
        bayessim_epochs=12,
        multimodal_iterations=12,
        multimodal_steps=60,
        landscape_points=12,
        n_jobs=1,
        compiled=False,
    ),
    "default": Sizes(
        n_particles=100,
        iterations=500,
        record_every=10,
        n_references=10,
        n_steps=400,
        windows=10,
        truth_samples=1000,
        nuts_iterations=150,
        nuts_warmup=50,
        nuts_tree_depth=4,
        bayessim_simulations=2000,
        bayessim_epochs=500,
        multimodal_iterations=400,
        multimodal_steps=300,
        landscape_points=61,
        n_jobs=2,
    ),
    "paper": Sizes(
        n_particles=100,
        iterations=2000,
        record_every=20,
        n_references=10,
        n_steps=400,
        windows=10,
        truth_samples=2000,
        nuts_iterations=2000,
        nuts_warmup=200,
        nuts_tree_depth=6,
        bayessim_simulations=10000,
        bayessim_epochs=3000,
        multimodal_iterations=2000,
        multimodal_steps=300,
        landscape_points=101,
        seeds=(0, 1, 2),
        n_jobs=2,
    ),
}


def sizes(scale: str) -> Sizes:
    """The :class:`Sizes` of ``scale``."""
    return select(SIZES, scale, "inference_synthetic")


#: The mean (m) of the Gaussian over the link lengths of the synthetic experiment. Its spread
#: along the major and minor axes and the major axis' direction follow, read off the paper's
#: figure (elongated, negatively correlated).
TRUTH_MEAN = (1.5, 2.0)
TRUTH_STD = (0.4, 0.1)
TRUTH_AXIS = (0.853, -0.521)
PRIOR = (0.5, 5.0)
SIGMA_OBS = 0.1
#: The two settings of the multimodal experiment (read off the paper's Fig. 6).
MODES = ((1.7, 1.5), (3.75, 3.9))

#: Hyperparameters per estimator (the iteration counts come from :class:`Sizes`).
OPTIONS: dict[str, dict] = {
    "SVGD": {"stepsize": 0.02},
    "CSVGD": {"stepsize": 0.02, "penalty": 1.0, "multiplier_stepsize": 0.1},
    "SGLD": {"stepsize": 3e-3},
    "CEM": {"components": 3, "elite_fraction": 0.2},
    "Emcee": {},
    "NUTS": {},
    "BayesSim": {"downsample": 20},
}


def truth_covariance() -> np.ndarray:
    u = np.asarray(TRUTH_AXIS) / np.linalg.norm(TRUTH_AXIS)
    v = np.array([-u[1], u[0]])
    return TRUTH_STD[0] ** 2 * np.outer(u, u) + TRUTH_STD[1] ** 2 * np.outer(v, v)


def point_mass_model(dt: float = 0.01, compiled: bool | None = None) -> DoublePendulum:
    """The synthetic pendulum: unit point masses at the link tips, no friction."""
    return DoublePendulum(
        ("l1", "l2"),
        dt=dt,
        point_mass=True,
        fixed={"m1": 1.0, "m2": 1.0, "d1": 0.0, "d2": 0.0},
        compiled=compiled,
    )


def length_limits() -> Limits:
    return Limits(("l1", "l2"), np.array([PRIOR[0]] * 2), np.array([PRIOR[1]] * 2))


def simulate_references(model: DoublePendulum, theta: np.ndarray, n_steps: int) -> torch.Tensor:
    """Trajectories (R, T+1, 4) from the sideways start, one per row of ``theta``."""
    s0 = torch.tensor(SIDEWAYS, dtype=torch.float64)
    with torch.no_grad():
        states = model.simulate(torch.as_tensor(theta, dtype=torch.float64), s0, n_steps)
    return torch.cat((s0.expand(len(theta), 1, 4), states), 1)


@dataclass(frozen=True)
class SyntheticProblem:
    """The references and the ground-truth samples of the synthetic experiment."""

    model: DoublePendulum
    limits: Limits
    theta_refs: np.ndarray
    references: torch.Tensor
    truth: np.ndarray
    mean: np.ndarray
    cov: np.ndarray

    def target(
        self,
        windows: int = 1,
        defects: str = "likelihood",
        combine: str = "sum",
        references: torch.Tensor | None = None,
    ) -> TrajectoryLikelihood:
        refs = self.references if references is None else references
        return TrajectoryLikelihood(
            self.model,
            refs,
            self.limits,
            sigma_obs=SIGMA_OBS,
            combine=combine,
            shooting_windows=windows,
            defects=defects,
        )


def synthetic_problem(s: Sizes, seed: int = 0) -> SyntheticProblem:
    """Reference trajectories from ``n_references`` draws of the truth Gaussian."""
    rng = np.random.default_rng(seed)
    mean, cov = np.asarray(TRUTH_MEAN), truth_covariance()
    theta_refs = rng.multivariate_normal(mean, cov, s.n_references)
    truth = rng.multivariate_normal(mean, cov, s.truth_samples)
    model = point_mass_model(compiled=s.compiled)
    refs = simulate_references(model, theta_refs, s.n_steps)
    return SyntheticProblem(model, length_limits(), theta_refs, refs, truth, mean, cov)


def estimator_settings(name: str, s: Sizes) -> tuple[int, int, dict, dict]:
    """(iterations, windows, target options, estimator options) of ``name`` at sizes ``s``."""
    options = dict(OPTIONS[name])
    iterations, windows, target = s.iterations, 1, {"defects": "likelihood"}
    if name == "CSVGD":
        windows, target = s.windows, {"defects": "constraint"}
    elif name == "NUTS":
        iterations = s.nuts_iterations
        options.update(warmup_steps=s.nuts_warmup, max_tree_depth=s.nuts_tree_depth)
    elif name == "BayesSim":
        iterations = s.bayessim_epochs
        options.update(n_simulations=s.bayessim_simulations)
    return iterations, windows, target, options


@dataclass
class EstimatorRun:
    """One estimator's run: snapshots of its particles (physical units) and the metrics."""

    name: str
    seed: int
    iterations: np.ndarray
    seconds: np.ndarray
    theta: list[np.ndarray]
    kl: np.ndarray
    mmd: np.ndarray
    loglik: np.ndarray
    outside: np.ndarray
    extra: dict = field(default_factory=dict)

    @property
    def final_theta(self) -> np.ndarray:
        return self.theta[-1]

    def summary(self) -> dict:
        return {
            "estimator": self.name,
            "seed": self.seed,
            "iterations": int(self.iterations[-1]),
            "seconds": float(self.seconds[-1]),
            "parameter KL": float(self.kl[-1]),
            "MMD": float(self.mmd[-1]),
            "log-likelihood": float(self.loglik[-1]),
        }


def evaluate(problem: SyntheticProblem, theta: np.ndarray) -> tuple[float, float, float, float]:
    """Parameter KL(truth ‖ particles), trajectory MMD, mean log-likelihood, share outside."""
    target = problem.target()
    inside = problem.limits.contains(theta)
    outside = 1.0 - float(inside.mean())
    if len(theta) < 4:
        return math.nan, math.nan, math.nan, outside
    kl = knn_kl(problem.truth, theta)
    th = torch.as_tensor(np.clip(theta, problem.limits.lower, problem.limits.upper))
    rollouts = target.standardise(target.rollouts(th)[:, 0])
    good = torch.isfinite(rollouts).all(-1).all(-1)
    refs = target.standardise(problem.references)
    distance = mmd(rollouts[good].numpy(), refs.numpy()) if good.any() else math.nan
    loglik = target.mean_log_likelihood(th).mean().item()
    return kl, distance, loglik, outside


def run_estimator(
    name: str, s: Sizes, seed: int = 0, problem_seed: int = 0, progress: bool = False
) -> EstimatorRun:
    """Run one estimator on the synthetic problem and evaluate every snapshot."""
    torch.set_num_threads(1)
    problem = synthetic_problem(s, problem_seed)
    iterations, windows, target_options, options = estimator_settings(name, s)
    target = problem.target(windows=windows, **target_options)
    estimator = make_estimator(name, target, n_particles=s.n_particles, seed=seed, **options)
    every = max(1, min(s.record_every, iterations // 10 or 1))
    history = estimator.run(iterations, record_every=every, progress=progress)
    thetas = [target.parameters(torch.as_tensor(p)).numpy() for p in history.particles]
    metrics = np.array([evaluate(problem, th) for th in thetas])
    extra = {}
    if name == "BayesSim":
        extra["losses"] = list(estimator.losses)
    return EstimatorRun(
        name,
        seed,
        np.array(history.iterations),
        np.array(history.seconds),
        thetas,
        metrics[:, 0],
        metrics[:, 1],
        metrics[:, 2],
        metrics[:, 3],
        extra,
    )


def _check_jobs(n_jobs) -> int:
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0 or n_jobs < -1:
        raise ValueError(f"n_jobs must be a positive int or -1, got {n_jobs!r}")
    return n_jobs


def compare_estimators(
    s: Sizes,
    names: tuple[str, ...],
    seeds: tuple[int, ...] | None = None,
    n_jobs: int = 1,
    problem_seed: int = 0,
) -> list[EstimatorRun]:
    """Every estimator in ``names`` for every seed, as independent ``joblib`` jobs.

    The jobs use the active joblib backend (local processes by default; a Dask or Ray backend
    runs them unchanged under ``joblib.parallel_backend``).
    """
    from joblib import Parallel, delayed

    n_jobs = _check_jobs(n_jobs)
    seeds = s.seeds if seeds is None else tuple(seeds)
    jobs = [(name, seed) for seed in seeds for name in names]
    return Parallel(n_jobs=n_jobs)(
        delayed(run_estimator)(name, s, seed, problem_seed) for name, seed in jobs
    )


@dataclass(frozen=True)
class Landscape:
    """Log-likelihood over a grid of link lengths, per number of shooting windows."""

    l1: np.ndarray
    l2: np.ndarray
    truth: tuple[float, float]
    loglik: dict[int, np.ndarray]

    def local_maxima(self, windows: int) -> int:
        """Strict local maxima of the grid (8-neighbourhood, interior points)."""
        z = self.loglik[windows]
        core = z[1:-1, 1:-1]
        is_max = np.ones_like(core, dtype=bool)
        for di in (-1, 0, 1):
            for dj in (-1, 0, 1):
                if di or dj:
                    is_max &= core > z[1 + di : z.shape[0] - 1 + di, 1 + dj : z.shape[1] - 1 + dj]
        return int(is_max.sum())


def likelihood_landscape(
    s: Sizes, windows: tuple[int, ...] = (1, 2, 10), truth: tuple[float, float] = TRUTH_MEAN
) -> Landscape:
    """The log-likelihood of one reference from ``truth`` over a grid of the prior box.

    For multiple shooting the shooting states sit on the reference (the data), so the surface
    shows what the parameters alone do to the fit within each window.
    """
    model = point_mass_model(compiled=s.compiled)
    limits = length_limits()
    ref = simulate_references(model, np.array([truth]), s.n_steps)
    grid = np.linspace(PRIOR[0], PRIOR[1], s.landscape_points)
    l1, l2 = np.meshgrid(grid, grid, indexing="ij")
    theta = torch.as_tensor(np.stack((l1.ravel(), l2.ravel()), 1))
    out = {}
    for w in windows:
        target = TrajectoryLikelihood(model, ref, limits, sigma_obs=SIGMA_OBS, shooting_windows=w)
        x = target.initial(len(theta))
        x[:, :2] = limits.normalise(theta)
        values = []
        with torch.no_grad():
            for chunk in torch.split(x, 2048):
                values.append(target.log_likelihood(chunk))
        out[w] = (torch.cat(values).numpy() / (s.n_steps * 4)).reshape(l1.shape)
    return Landscape(grid, grid, truth, out)


@dataclass
class MultimodalResult:
    """CSVGD on two references from two settings, with the product and the sum likelihood."""

    modes: np.ndarray
    references: torch.Tensor
    runs: dict[str, EstimatorRun]
    radius: float

    def share_near(self, label: str) -> np.ndarray:
        """The share of the run's final particles within ``radius`` of each true mode."""
        theta = self.runs[label].final_theta
        d = np.linalg.norm(theta[:, None] - self.modes[None], axis=-1)
        return (d < self.radius).mean(0)


#: The multimodal runs, as (label, likelihood combination, bandwidth scale). With Liu & Wang's
#: median bandwidth the kernel couples the two modes' particles (see the chapter), so the
#: comparison uses a bandwidth 10× smaller and keeps the median run as an ablation.
MULTIMODAL_RUNS = (("product", "product", 0.1), ("sum", "sum", 0.1), ("sum, median", "sum", 1.0))


def _multimodal_run(combine: str, scale: float, s: Sizes, seed: int) -> EstimatorRun:
    torch.set_num_threads(1)
    model = point_mass_model(compiled=s.compiled)
    modes = np.asarray(MODES)
    refs = simulate_references(model, modes, s.multimodal_steps)
    target = TrajectoryLikelihood(
        model,
        refs,
        length_limits(),
        sigma_obs=SIGMA_OBS,
        combine=combine,
        shooting_windows=s.windows,
        defects="constraint",
    )
    options = {**OPTIONS["CSVGD"], "bandwidth_scale": scale}
    estimator = make_estimator("CSVGD", target, n_particles=s.n_particles, seed=seed, **options)
    iterations = s.multimodal_iterations
    history = estimator.run(iterations, record_every=max(1, iterations // 20), progress=False)
    thetas = [target.parameters(torch.as_tensor(p)).numpy() for p in history.particles]
    nan = np.full(len(thetas), math.nan)
    return EstimatorRun(
        f"CSVGD ({combine}, h × {scale:g})",
        seed,
        np.array(history.iterations),
        np.array(history.seconds),
        thetas,
        nan,
        nan,
        nan,
        nan,
    )


def multimodal_experiment(
    s: Sizes, seed: int = 0, n_jobs: int = 1, radius: float = 0.4
) -> MultimodalResult:
    """CSVGD with the product and the sum likelihood on the two references (joblib jobs).

    The runs are :data:`MULTIMODAL_RUNS`, keyed by their labels.
    """
    from joblib import Parallel, delayed

    n_jobs = _check_jobs(n_jobs)
    runs = Parallel(n_jobs=n_jobs)(
        delayed(_multimodal_run)(combine, scale, s, seed) for _, combine, scale in MULTIMODAL_RUNS
    )
    model = point_mass_model(compiled=s.compiled)
    refs = simulate_references(model, np.asarray(MODES), s.multimodal_steps)
    labels = [label for label, _, _ in MULTIMODAL_RUNS]
    return MultimodalResult(np.asarray(MODES), refs, dict(zip(labels, runs, strict=True)), radius)


def with_sizes(s: Sizes, **changes) -> Sizes:
    """``s`` with some fields replaced (for tests and what-ifs)."""
    return replace(s, **changes)
