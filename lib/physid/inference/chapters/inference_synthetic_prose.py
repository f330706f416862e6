"""The prose of the chapter on inference from synthetic data (``book/inference_synthetic.md``):
what it says about each result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed
(:mod:`physid.inference.chapters.inference_synthetic`) and returns the numbers and the phrases
its prose quotes, by glue name, for :func:`physid.book.display.glue_all`. A number the prose was
written for a range of is a :class:`~physid.book.display.Bounded`. A phrase that depends on a
result (whether multiple shooting smooths the landscape, how the estimators rank, whether both
modes survive) is decided here, not in a hidden cell. :func:`gradient_error` is the one check
the prose quotes that the chapter does not show.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from physid.book.display import Bounded, plural
from physid.inference.chapters import inference_synthetic as ex
from physid.inference.estimators import BayesSim
from physid.inference.likelihood import SHOOTING_SPREAD, TrajectoryLikelihood
from physid.inference.pendulum import DoublePendulum

__all__ = [
    "MULTIMODAL_KEYS",
    "comparison_prose",
    "gradient_error",
    "landscape_prose",
    "metric",
    "multimodal_prose",
    "setup_prose",
    "simulator_prose",
]

#: The glue-name prefix of each multimodal run's shares, by the run's label
#: (:data:`~physid.inference.chapters.inference_synthetic.MULTIMODAL_RUNS`).
MULTIMODAL_KEYS: dict[str, str] = {
    "sum": "sum",
    "sum, h × 0.1": "small",
    "product": "product",
    "sum, started on reference 1": "ref",
}

#: The words of the ranks between the highest and the lowest, for :func:`comparison_prose`.
_ORDINALS = ("second", "third", "fourth", "fifth", "sixth")


def setup_prose(s: ex.SyntheticSizes) -> dict[str, Any]:
    """The set-up as the prose states it at sizes ``s``: the truth, the prior, the pendulum,
    the noise scales, the modes of the multimodal experiment, the paper's KLs, the estimators'
    settings and the counts of references, steps, particles and iterations."""
    nuts, bayessim = ex.estimator_settings("NUTS", s), ex.estimator_settings("BayesSim", s)
    sigma_def = inspect.signature(TrajectoryLikelihood).parameters["sigma_def"].default
    hidden = inspect.signature(BayesSim).parameters["hidden"].default
    prose: dict[str, Any] = {
        "truth_l1": Bounded(ex.TRUTH_MEAN[0], *ex.PRIOR),
        "truth_l2": Bounded(ex.TRUTH_MEAN[1], *ex.PRIOR),
        "prior_low": Bounded(ex.PRIOR[0], 0, 100),
        "prior_high": Bounded(ex.PRIOR[1], 0, 100),
        "mass_1": Bounded(ex.POINT_MASSES[0], 0, 100),
        "mass_2": Bounded(ex.POINT_MASSES[1], 0, 100),
        "dt_ms": Bounded(1000 * ex.point_mass_model().dt, 0, 1000),
        "std_major": Bounded(ex.TRUTH_STD[0], 0, 10),
        "std_minor": Bounded(ex.TRUTH_STD[1], 0, 10),
        "sigma_obs": Bounded(ex.SIGMA_OBS, 0, 10),
        "sigma_def": Bounded(sigma_def, 0, 10),
        "shoot_spread": Bounded(SHOOTING_SPREAD, 0, 10),
        "cem_components": Bounded(ex.OPTIONS["CEM"]["components"], 1, 100),
        "mdn_hidden": Bounded(hidden, 1, 1e4),
        "n_refs": plural(s.n_references, "parameter setting"),
        "n_steps": plural(s.n_steps, "step"),
        "n_sims": plural(bayessim.options["n_simulations"], "simulation"),
        "n_particles": plural(s.n_particles, "particle"),
        "n_walkers": plural(s.n_particles, "walker"),
        "iterations": plural(s.iterations, "iteration"),
        "nuts_iterations": plural(nuts.iterations, "iteration"),
        "bayessim_epochs": plural(bayessim.iterations, "epoch"),
        "nuts_depth": Bounded(nuts.options["max_tree_depth"], 1, 20),
        "windows_many": plural(s.windows, "shooting window"),
        "windows_count": Bounded(s.windows, 2, 1000),
        "mm_steps": plural(s.multimodal_steps, "step"),
        "mm_iterations": plural(s.multimodal_iterations, "iteration"),
        "csvgd_shown": Bounded(min(20, s.n_particles), 1, 1e4),
    }
    for i, mode in enumerate(ex.MODES):
        prose[f"mode{i}_l1"] = Bounded(mode[0], *ex.PRIOR)
        prose[f"mode{i}_l2"] = Bounded(mode[1], *ex.PRIOR)
    for name, value in ex.PAPER_KL.items():
        prose[f"paper_kl_{name}"] = Bounded(value, 0, 100)
    return prose


def gradient_error(
    target: TrajectoryLikelihood, lengths: tuple[float, float] = (1.4, 2.1), step: float = 1e-6
) -> float:
    """The largest relative difference between autograd's gradient of ``target``'s
    log-likelihood in the normalised lengths, at ``lengths`` (m), and central finite
    differences with ``step``."""
    x = target.limits.normalise(torch.tensor([lengths], dtype=torch.float64)).requires_grad_(True)
    (grad,) = torch.autograd.grad(target.log_likelihood(x).sum(), x)
    x = x.detach()
    fd = torch.stack(
        [
            (target.log_likelihood(x + step * e) - target.log_likelihood(x - step * e)) / (2 * step)
            for e in torch.eye(2, dtype=torch.float64)
        ],
        -1,
    )[0]
    return ((grad[0] - fd).abs().max() / fd.abs().max()).item()


def simulator_prose(
    model: DoublePendulum, s: ex.SyntheticSizes, target: TrajectoryLikelihood
) -> dict[str, Any]:
    """The simulator section's numbers: the energy drift (% of the potential's depth) of
    ``model`` with the truth's lengths over the horizon, the horizon (s), and the relative
    error of ``target``'s gradient (:func:`gradient_error`)."""
    truth = torch.tensor(ex.TRUTH_MEAN, dtype=torch.float64)
    return {
        "energy_drift_pct": Bounded(100 * ex.energy_drift(model, truth, s.n_steps), 0, 100),
        "horizon_s": Bounded(s.n_steps * model.dt, 0, 1000),
        "grad_error": Bounded(gradient_error(target), 0, 1),
    }


def landscape_prose(maxima: Mapping[int, int], windows: int, smoother: bool) -> dict[str, Any]:
    """The landscape section's counts of local maxima (``maxima``, by number of windows) with
    single shooting and with ``windows`` windows, and what the landscape claim (``smoother``)
    says multiple shooting does."""
    return {
        "maxima_ss": plural(maxima[1], "local maximum", "local maxima"),
        "maxima_ms": plural(maxima[windows], "local maximum", "local maxima"),
        "landscape_verdict": (
            "multiple shooting removes most of the ridges between the prior box and the truth"
            if smoother
            else "at this horizon multiple shooting does not reduce them"
        ),
    }


def metric(final: Mapping[str, Mapping[str, float]], key: str) -> dict[str, float]:
    """One metric (``key`` of an estimator run's summary) of every estimator in ``final``."""
    return {name: values[key] for name, values in final.items()}


def comparison_prose(final: Mapping[str, Mapping[str, float]], n_seeds: int) -> dict[str, Any]:
    """The comparison's numbers and phrases: each estimator's final parameter KL, MMD² and
    log-likelihood (``final``, means over ``n_seeds`` seeds), the ranking by KL, where CEM's
    log-likelihood ranks, and how SVGD, Emcee and BayesSim compare with CSVGD and the paper."""
    kl, ll = metric(final, "parameter KL"), metric(final, "log-likelihood")
    prose: dict[str, Any] = {}
    for name, values in final.items():
        prose[f"kl_{name}"] = Bounded(values["parameter KL"], -100, 1e4)
        prose[f"mmd_{name}"] = Bounded(values["MMD"], 0, 2)
        prose[f"ll_{name}"] = Bounded(values["log-likelihood"], -1e9, 10)
    ranking = sorted(kl, key=kl.get)
    ll_ranking = sorted(ll, key=ll.get, reverse=True)
    if len(ll_ranking) > len(_ORDINALS) + 2:
        raise ValueError(f"at most {len(_ORDINALS) + 2} estimators can be ranked, got {len(ll)}")
    ordinals = ["highest", *(f"{word} highest" for word in _ORDINALS[: len(ll) - 2]), "lowest"]
    prose.update(
        seed_phrase="one seed per estimator" if n_seeds == 1 else f"the mean over {n_seeds} seeds",
        kl_ranking=", ".join(f"{name} ({kl[name]:.2f})" for name in ranking),
        kl_first=ranking[0],
        cem_ll_rank=ordinals[ll_ranking.index("CEM")],
        svgd_ll_relation="below" if ll["SVGD"] < ll["CSVGD"] else "above",
        emcee_vs_paper="lower" if kl["Emcee"] < ex.PAPER_KL["Emcee"] else "higher",
        bayessim_vs_csvgd="below" if kl["BayesSim"] < kl["CSVGD"] else "above",
    )
    return prose


def multimodal_prose(
    share: Mapping[str, np.ndarray], product_mean: np.ndarray, radius: float
) -> dict[str, Any]:
    """The multimodal section's numbers and verdicts: the radius (m), each run's shares (%)
    of particles near the two settings (``share``, by the labels of :data:`MULTIMODAL_KEYS`),
    the product's mean lengths, whether both modes survive the sum, whether the bandwidth
    decides that, and whether the start on the first reference picks the mode."""

    def both_kept(label: str) -> bool:
        return bool(np.all(share[label] >= 0.3))

    prose: dict[str, Any] = {"mm_radius": Bounded(radius, 0, 10)}
    for label, key in MULTIMODAL_KEYS.items():
        prose[f"{key}_share_a"] = Bounded(100 * share[label][0], 0, 100)
        prose[f"{key}_share_b"] = Bounded(100 * share[label][1], 0, 100)
    ref = share["sum, started on reference 1"]
    prose.update(
        product_l1=Bounded(product_mean[0], *ex.PRIOR),
        product_l2=Bounded(product_mean[1], *ex.PRIOR),
        sum_verdict=(
            "both modes survive"
            if both_kept("sum")
            else "the particles do not gather near both settings at this scale"
        ),
        bandwidth_verdict=(
            "the bandwidth changes little"
            if both_kept("sum") == both_kept("sum, h × 0.1")
            else "here the bandwidth decides whether both modes survive"
        ),
        ref_verdict=(
            "the start, not the likelihood, picks the mode"
            if ref[1] < 0.1 and ref[0] >= 0.3
            else "at this scale the start alone does not pick the mode"
        ),
    )
    return prose
