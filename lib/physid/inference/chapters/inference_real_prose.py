"""The prose of the chapter on real data (``book/inference_real.md``): what it says about each
result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed (the double pendulum's,
:mod:`physid.inference.chapters.inference_real_pendulum`, and the shaken box's,
:mod:`physid.inference.chapters.inference_real_box`) and returns the numbers and the phrases
its prose quotes, by glue name, for :func:`physid.book.display.glue_all`. A number the prose
was written for a range of is a :class:`~physid.book.display.Bounded`. A phrase that depends on
a result (whether the recordings are installed, whether a rollout blew up, how many of the
pendulum's claims hold) is decided here, not in a hidden cell. :func:`most_likely_weights` is
the one search the prose quotes that the chapter does not show.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from physid.book.claims import Verdict
from physid.book.display import Bounded, plural
from physid.inference import ibm
from physid.inference.box import TRUE_WEIGHTS
from physid.inference.chapters import inference_real_box as sb
from physid.inference.chapters import inference_real_pendulum as rp
from physid.inference.chapters.inference_real_claims import show_metric
from physid.inference.chapters.inference_synthetic import estimator_settings
from physid.inference.estimators import SGLD, BayesSim
from physid.inference.likelihood import SHOOTING_SPREAD
from physid.inference.pendulum import DEFAULTS, REAL_LIMITS
from physid.inference.statistics import DEFAULT_LAGS

__all__ = [
    "box_convergence_prose",
    "box_prose",
    "convergence_prose",
    "data_prose",
    "identifiability_prose",
    "most_likely_weights",
    "prediction_prose",
    "spread_prose",
    "transfer_prose",
    "setup_prose",
    "table_prose",
    "weights_prose",
]

#: The order of the weights' coordinates with the two weights swapped.
_SWAP = [2, 3, 0, 1]


def setup_prose(s: rp.RealSizes) -> dict[str, Any]:
    """The pendulum's set-up as the prose states it at sizes ``s``: the trajectory, the
    windows, the counts of particles, iterations and held-out trajectories, the camera's rate,
    the link lengths' values and limits, the noise scales, the kNN's ``k``, BayesSim's settings
    and the paper's sizes."""
    bayessim = inspect.signature(BayesSim).parameters
    shooting_dims = 4 * (s.windows - 1)
    paper = rp.SIZES["paper"]
    return {
        "n_steps": plural(s.n_steps, "frame"),
        "horizon_s": Bounded(s.n_steps * ibm.DT, 0, 100),
        "windows": plural(s.windows, "shooting window"),
        "n_particles": plural(s.n_particles, "particle"),
        "iterations": plural(s.iterations, "iteration"),
        "n_tests": plural(s.n_tests, "held-out trajectory", "held-out trajectories"),
        "rate": Bounded(ibm.RATE, 1, 1e4),
        "l1": Bounded(DEFAULTS["l1"], 0, 1),
        "l2": Bounded(DEFAULTS["l2"], 0, 1),
        "l1_low": Bounded(REAL_LIMITS["l1"][0], 0, 1),
        "l1_high": Bounded(REAL_LIMITS["l1"][1], 0, 1),
        "sigma_obs": Bounded(rp.SIGMA_OBS, 0, 10),
        "sigma_def": Bounded(rp.SIGMA_DEF, 0, 10),
        "shooting_spread": Bounded(SHOOTING_SPREAD, 0, 10),
        "sgld_max_noise": Bounded(inspect.signature(SGLD).parameters["max_noise"].default, 0, 1),
        "horizons": ", ".join(f"{h:g}" for h in rp.HORIZONS[:-1]) + f" and {rp.HORIZONS[-1]:g}",
        "k_neighbours": Bounded(rp.K_NEIGHBOURS, 1, 100),
        "bayessim_sims": plural(s.bayessim_simulations, "simulation"),
        "bayessim_epochs": plural(s.bayessim_epochs, "epoch"),
        "shooting_dims": plural(shooting_dims, "dimension"),
        "emcee_walkers": plural(2 * (len(REAL_LIMITS) + shooting_dims), "walker"),
        "bayessim_every": str(estimator_settings("BayesSim", s).options["every"]),
        "bayessim_lags": ", ".join(str(lag) for lag in DEFAULT_LAGS),
        "bayessim_depth": Bounded(bayessim["depth"].default, 1, 10),
        "mdn_hidden": Bounded(bayessim["hidden"].default, 1, 1e4),
        "paper_particles": plural(paper.n_particles, "particle"),
        "paper_iterations": plural(paper.iterations, "iteration"),
    }


def data_prose(problem: rp.RealProblem) -> dict[str, Any]:
    """Where ``problem``'s trajectories come from (the recordings, or the simulated stand-in
    when they are not installed) and which runs are the reference and the tests."""
    return {
        "data_source": (
            f"the recordings ({problem.source})"
            if problem.real
            else "a SIMULATED STAND-IN, because the recordings are not installed"
        ),
        "reference_run": str(problem.runs[0]),
        "test_runs": ", ".join(str(r) for r in problem.runs[1:]),
    }


def identifiability_prose(problem: rp.RealProblem, seed: int = 0) -> dict[str, Any]:
    """What the reference can tell apart
    (:func:`~physid.inference.chapters.inference_real_pendulum.symmetries` at three points
    drawn with ``seed``): the rank of the rollout's Jacobian, the count of
    directions that leave the motion unchanged, the joint offset ``l1``'s largest weight in
    them, and, on the recordings, the elbow-to-tip distance the reference run's markers imply
    (the stand-in has no markers)."""
    found = rp.symmetries(problem, seed=seed)
    dim = len(found.names)
    prose: dict[str, Any] = {
        "symmetry_points": plural(len(found.points), "point"),
        "jacobian_rank": Bounded(found.rank, 0, dim),
        "n_symmetries": Bounded(dim - found.rank, 0, dim),
        "l1_null_share": Bounded(found.null_share[found.names.index("l1")], 0, 1),
        "smallest_identified": Bounded(found.singular_values[:, found.rank - 1].min(), 0, 1),
    }
    if not problem.real:
        return {**prose, "implied_l2_text": "The stand-in has no markers to measure it"}
    reference = problem.runs[0]
    implied = ibm.load_run(reference).implied_l2
    return {
        **prose,
        "implied_l2": Bounded(implied, 0, 1),
        "implied_l2_text": (
            f"The markers give the elbow-to-tip distance of run {reference} as {implied:.3f} m "
            f"(scaled so that the pivot-to-elbow distance is {DEFAULTS['l1']:.3f} m)"
        ),
    }


def _short(run: rp.RealRun, name: str) -> float:
    """``run``'s metric ``name`` (``"rmse"`` or ``"energy"``) at the 0.25 s horizon."""
    values = getattr(run.metrics, name)
    index = rp.HORIZONS.index(0.25)
    return values[index] if len(values) > index else float("nan")


def prediction_prose(
    runs: Mapping[tuple[str, str], rp.RealRun],
    baselines: Sequence[rp.RealRun],
    ablation: Sequence[rp.RealRun],
    problem: rp.RealProblem,
) -> dict[str, Any]:
    """What the prose says of the held-out prediction: the baselines' and CSVGD's RMSE and
    energy score over 0.25 s, the estimator with the lowest RMSE there, the range of the RMSE
    over 1 s, the joint offset ``l1`` the estimators put the pendulum at (the medians of their
    particles) and, per family of the start ablation ``ablation``, its MMD started on the
    record against started on its rollouts."""
    mean, draws = baselines
    csvgd = runs[("(C)SVGD", "multiple")]
    short = {key: _short(run, "rmse") for key, run in runs.items()}
    best = min(short, key=lambda key: np.inf if np.isnan(short[key]) else short[key])
    everyone = [*runs.values(), *baselines]
    long = [
        run.metrics.rmse[-1]
        for run in everyone
        if len(run.metrics.rmse) == len(rp.HORIZONS) and np.isfinite(run.metrics.rmse[-1])
    ]
    l1 = problem.limits.names.index("l1")
    medians = [float(np.median(run.theta[:, l1])) for run in runs.values()]
    return {
        "prior_mean_rmse": Bounded(_short(mean, "rmse"), 0, 100),
        "prior_draws_rmse": Bounded(_short(draws, "rmse"), 0, 100),
        "prior_draws_energy": Bounded(_short(draws, "energy"), 0, 100),
        "csvgd_rmse": Bounded(_short(csvgd, "rmse"), 0, 100),
        "csvgd_energy": Bounded(_short(csvgd, "energy"), 0, 100),
        "best_short": f"{runs[best].estimator} on {best[1]} shooting",
        "best_short_rmse": Bounded(short[best], 0, 100),
        "long_rmse_text": (
            f"Over a whole second every set, the prior's mean included, is off by "
            f"{min(long):.1f}–{max(long):.1f} rad: the double pendulum is chaotic, and a second "
            "is long enough for small differences in the start state and the parameters to "
            "grow into different motions"
            if long
            else "The trajectories at this scale are shorter than a second, the longest horizon"
        ),
        "l1_range": f"{min(medians):.3f}–{max(medians):.3f}",
        "csvgd_l1": Bounded(float(np.median(csvgd.theta[:, l1])), 0, 1),
        "start_text": "; ".join(
            f"{run.estimator} {show_metric(runs[(run.family, 'multiple')].metrics.mmd)} from "
            f"the record, {show_metric(run.metrics.mmd)} from its rollouts"
            for run in ablation
            if run.start == "rollout"
        ),
    }


def spread_prose(metrics: Sequence[rp.Metrics]) -> dict[str, Any]:
    """The ends of the spread test ``metrics`` (one per factor of
    :data:`~physid.inference.chapters.inference_real_pendulum.SPREAD_FACTORS`: the set as it
    is and widened most): ``KL(sim‖real)``, the MMD and the angle RMSE over 0.25 s."""
    index = rp.HORIZONS.index(0.25)
    same, widest = metrics[rp.SPREAD_FACTORS.index(1.0)], metrics[-1]
    return {
        "spread_factor": Bounded(rp.SPREAD_FACTORS[-1], 0, 100),
        "spread_kl_same": show_metric(same.kl_sim_real),
        "spread_kl_widest": show_metric(widest.kl_sim_real),
        "spread_mmd_same": show_metric(same.mmd),
        "spread_mmd_widest": show_metric(widest.mmd),
        "spread_rmse_same": show_metric(same.rmse[index] if same.rmse else float("nan")),
        "spread_rmse_widest": show_metric(widest.rmse[index] if widest.rmse else float("nan")),
    }


def transfer_prose(studies: Mapping[str, Sequence[rp.RealRun]]) -> dict[str, Any]:
    """What the prose says of the transfer study: per estimator of ``studies`` (name → its
    runs of :func:`~physid.inference.chapters.inference_real_pendulum.transfer_study`, the
    chapter's set-up first), the chapter's RMSE over 0.25 s, the set-up with the lowest and
    its RMSE, glued as ``transfer_<estimator>`` text."""
    prose: dict[str, Any] = {}
    for name, runs in studies.items():
        short = [_short(run, "rmse") for run in runs]
        best = int(np.nanargmin(short)) if not np.isnan(short).all() else 0
        prose[f"transfer_{name.lower()}"] = (
            f"{name} {show_metric(short[0])} rad with the chapter's set-up, "
            f"{show_metric(min(short, key=lambda v: np.inf if np.isnan(v) else v))} at best "
            f"({runs[best].family})"
        )
    return prose


def convergence_prose(run: rp.RealRun, other: rp.RealRun) -> dict[str, Any]:
    """Whether multiple-shooting ``run`` (CSVGD's) converged, from its trace: its smallest
    median RMS defect, where it was reached, the defect at the end, and the reference's
    log-likelihood at the end and at its best; and ``other`` (CSVGD with the other defect
    form): its defect and log-likelihood at the end."""
    trace = run.diagnostics["trace"]
    defects, loglik = np.asarray(trace["defect_rms"]), np.asarray(trace["loglik"])
    low = int(np.nanargmin(defects))
    theirs = other.diagnostics["trace"]
    return {
        "other_defect_end": Bounded(float(theirs["defect_rms"][-1]), 0, 1e6),
        "other_loglik_end": Bounded(float(theirs["loglik"][-1]), -1e9, 1e9),
        "csvgd_defect_min": Bounded(float(defects[low]), 0, 1e6),
        "csvgd_defect_min_at": plural(int(trace["iterations"][low]), "iteration"),
        "csvgd_defect_end": Bounded(float(defects[-1]), 0, 1e6),
        "csvgd_loglik_best": Bounded(float(np.nanmax(loglik)), -1e9, 1e9),
        "csvgd_loglik_end": Bounded(float(loglik[-1]), -1e9, 1e9),
        "csvgd_converged_text": (
            "has not converged: its defects grow again after their smallest value"
            if defects[-1] > 1.5 * defects[low]
            else "has settled: its defects end near their smallest value"
        ),
    }


def table_prose(
    runs: Mapping[tuple[str, str], rp.RealRun],
    bayessim: Sequence[rp.RealRun],
    sgld_gain: float,
    verdicts: Sequence[Verdict],
) -> dict[str, Any]:
    """What the prose says under the tables: whether any rollout of Table II's ``runs`` (keyed
    by ``(family, shooting)``) or of the ``bayessim`` variants blew up, the range of their
    times, CSVGD's metrics on multiple shooting, SGLD's MMD gain from multiple shooting
    (``sgld_gain``) and how many of the pendulum's claims (``verdicts``) hold."""
    every = [*runs.values(), *bayessim]
    unstable = sum(r.metrics.unstable for r in every)
    seconds = [r.seconds for r in every]
    csvgd = runs[("(C)SVGD", "multiple")]
    held = sum(bool(verdict.holds) for verdict in verdicts)
    prose: dict[str, Any] = {
        "unstable_text": (
            "No particle's rollout blew up"
            if unstable == 0
            else "1 particle's rollout blew up and was left out"
            if unstable == 1
            else f"{unstable} particles' rollouts blew up and were left out"
        ),
        "run_seconds": f"{min(seconds):.0f}–{max(seconds):.0f}",
        "sgld_gain": show_metric(sgld_gain),
        "real_claims_held": f"{held} of {len(verdicts)} hold",
    }
    for name, value in zip(("kl_rs", "kl_sr", "mmd"), csvgd.metrics.as_row(), strict=True):
        prose[f"csvgd_{name}"] = show_metric(value)
    return prose


def box_prose(b: sb.BoxSizes, phase_one: sb.PhaseOne) -> dict[str, Any]:
    """The shaken box's numbers at sizes ``b``: phase I's point error before and after
    (``phase_one``, mm), the counts of particles and iterations of both phases, the modes'
    radius and reach (cm) and the recording's noise (mrad)."""
    return {
        "box_error_before_mm": Bounded(1000 * phase_one.error_before, 0, 1e4),
        "box_error_after_mm": Bounded(1000 * phase_one.error_after, 0, 1e4),
        "phase1_particles": plural(b.phase1_particles, "particle"),
        "phase1_iterations": plural(b.phase1_iterations, "iteration"),
        "box_particles": plural(b.n_particles, "particle"),
        "box_iterations": plural(b.iterations, "iteration"),
        "nuts_box_iterations": plural(b.nuts_iterations, "iteration"),
        "mode_radius_cm": Bounded(100 * sb.MODE_RADIUS, 0, 100),
        "mode_reach_cm": Bounded(100 * sb.MODE_REACH, 0, 100),
        "box_noise_mrad": Bounded(1000 * sb.NOISE, 0, 1000),
    }


def box_convergence_prose(weight_runs: Sequence[sb.WeightRun]) -> dict[str, Any]:
    """``box_convergence_text``: CSVGD's and SVGD's share of particles in the modes and median
    ``|w1x|`` at the paper's phase-II run length
    (:func:`~physid.inference.chapters.inference_real_box.paper_stop`) and at the end of their
    runs, or only at the end where the runs are not longer than the paper's."""
    by_name = {run.estimator: run for run in weight_runs}
    paper = sb.SIZES["paper"].iterations

    def state(share: float, reach: float) -> str:
        return (
            f"{100 * share:.0f} % of its particles in the modes, weight 1 a median "
            f"{100 * reach:.1f} cm from the centre"
        )

    csvgd, svgd = by_name["CSVGD"], by_name["SVGD"]
    end = {
        run.estimator: state(run.trace["in_modes"][-1], run.trace["reach"][-1])
        for run in (csvgd, svgd)
    }
    last = int(csvgd.trace["iterations"][-1])
    if last <= paper:
        text = (
            f"These runs stop at {plural(last, 'iteration')}, within the paper's "
            f"{paper}: CSVGD ends with {end['CSVGD']}, SVGD with {end['SVGD']}."
        )
    else:
        stops = {run.estimator: sb.paper_stop(run) for run in (csvgd, svgd)}
        at = stops["CSVGD"][0]
        text = (
            f"At the paper's run length ({plural(at, 'iteration')}) CSVGD has "
            f"{state(*stops['CSVGD'][1:])}, and SVGD {state(*stops['SVGD'][1:])}; after "
            f"{plural(last, 'iteration')}, CSVGD has {end['CSVGD']}, and SVGD "
            f"{end['SVGD']}. The verdict below is on the end of the run; a run at the paper's "
            "scale stops where the paper did."
        )
    return {"box_convergence_text": text}


def most_likely_weights(
    weight_runs: Sequence[sb.WeightRun], box: dict[str, float], seed: int = 0
) -> np.ndarray:
    """Of all the final particles of ``weight_runs`` (clipped into the limits), the weight
    positions (4,) with the highest likelihood of the recording with the box ``box`` (phase
    I's) and ``seed``'s noise."""
    target = sb.box_problem(2, box, seed).target()
    pooled = np.concatenate([run.theta for run in weight_runs])
    pooled = np.clip(pooled, target.limits.lower, target.limits.upper)
    with torch.no_grad():
        loglik = target.log_likelihood(target.limits.normalise(pooled)).numpy()
    return pooled[int(np.argmax(loglik))]


def weights_prose(top: np.ndarray) -> dict[str, Any]:
    """The most likely weight positions ``top`` (``w1x, w1y, w2x, w2y``, m), swapped so that
    weight 1 is on the ``+x`` side as in the truth, and the true positions."""
    top = top if top[0] > 0 else top[_SWAP]
    return {
        "best_weights": f"({top[0]:+.3f}, {top[1]:+.3f}) m and ({top[2]:+.3f}, {top[3]:+.3f}) m",
        "true_weights": "({:+.3f}, {:+.3f}) m and ({:+.3f}, {:+.3f}) m".format(
            *(TRUE_WEIGHTS[n] for n in ("w1x", "w1y", "w2x", "w2y"))
        ),
    }
