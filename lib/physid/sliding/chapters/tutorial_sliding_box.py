"""The driver of the sliding-box tutorial (``book/tutorial_sliding_box.md``): what its prose
says about each result, as functions a test can check.

Each ``*_prose`` function takes results the chapter computed and returns the numbers and the
phrases its prose quotes, by glue name, for :func:`physid.book.display.glue_all`. A number the
prose was written for a range of is a :class:`~physid.book.display.Bounded`. A phrase that
depends on a result (which side of μ⋆ is steeper, whether the descent lands closer than the
closed form) is decided here, not in a hidden cell. :func:`damping_pitfall` is the one study the
prose quotes that the chapter does not show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from physid.book.display import Bounded, plural
from physid.core.validate import check_positive
from physid.sliding import model as sliding
from physid.sliding.model import BulletGradientCheck, FitResult, Landscape, SlideData

__all__ = [
    "DampingPitfall",
    "damping_pitfall",
    "fit_prose",
    "gradient_prose",
    "model_prose",
    "setup_prose",
]


def setup_prose(
    box: dict[str, Any], mu_box: float, mu_plane: float, v0: float, sigma: float, data: SlideData
) -> dict[str, Any]:
    """The slide's set-up as the prose states it: the box, the coefficients, the noise and
    the rates (Bullet's steps, the samples)."""
    duration = box["duration"]
    return {
        "box_size": " × ".join(f"{200 * h:g}" for h in box["half_extents"]),
        "mass": box["mass"],
        "duration_text": "one second" if duration == 1 else f"{duration:g} s",
        "mu_box": mu_box,
        "mu_plane": mu_plane,
        "mu_true": Bounded(data.mu_effective, 0, sliding.BULLET_MAX_FRICTION),
        "max_friction": sliding.BULLET_MAX_FRICTION,
        "v0": v0,
        "sigma_mm": 1e3 * sigma,
        "bullet_hz": 1 / sliding.BULLET_DT,
        "sample_hz": 1 / (data.step_dt * data.sample_every),
        "n_samples": plural(len(data.t), "sample time", "sample times"),
        "default_damping": sliding.BULLET_DEFAULT_DAMPING,
    }


@dataclass(frozen=True)
class DampingPitfall:
    """The μ that minimises the model's loss on the undamped slide and on the same slide with
    Bullet's default damping (on a fine grid around μ⋆), and the bias in % that damping adds."""

    mu_undamped: float
    mu_damped: float

    @property
    def bias_pct(self) -> float:
        """How much higher (in %) the damped slide's μ comes out."""
        return 100 * (self.mu_damped / self.mu_undamped - 1)


def damping_pitfall(
    clean: SlideData,
    box: dict[str, Any],
    mu_box: float,
    mu_plane: float,
    v0: float,
    points: int = 2001,
) -> DampingPitfall:
    """Slide the box again with Bullet's default damping and identify μ on both slides by the
    loss's minimum on a grid of ``points`` values within ±20 % of μ⋆."""
    mu_true = check_positive("mu_true", clean.mu_effective)
    damped = sliding.bullet_slide(
        mu_box=mu_box, mu_plane=mu_plane, v0=v0, damping=sliding.BULLET_DEFAULT_DAMPING, **box
    )
    grid = dict(mu_min=0.8 * mu_true, mu_max=1.2 * mu_true, points=points)
    return DampingPitfall(
        sliding.loss_landscape(clean, **grid).argmin, sliding.loss_landscape(damped, **grid).argmin
    )


def model_prose(
    data: SlideData,
    v0: float,
    dts: np.ndarray,
    slope: float,
    distances: dict[str, float],
    bullet_follows_model: bool,
) -> dict[str, Any]:
    """The model section's numbers: the step, the grid of steps of the convergence study, its
    slope, the three stopping distances (``distances``: ``model``, ``closed``, ``bullet``, m)
    and whether pybullet stops where the time-stepped model does."""
    return {
        "dt_ms": 1e3 * data.step_dt,
        "dt_min_ms": 1e3 * float(np.min(dts)),
        "dt_max_s": float(np.max(dts)),
        "sim_distance": distances["model"],
        "closed_distance": distances["closed"],
        "bullet_distance": distances["bullet"],
        "half_step_mm": 1e3 * v0 * data.step_dt / 2,
        "convergence_slope": Bounded(slope, 0.9, 1.1),
        "bullet_follows": (
            "pybullet stops where the time-stepped model does, not where the continuous law says"
            if bullet_follows_model
            else "pybullet is nearer the continuous law than the time-stepped model"
        ),
    }


def gradient_prose(
    landscape: Landscape, check: BulletGradientCheck, gradient_holds: bool, tolerance: float
) -> dict[str, Any]:
    """The gradient section's numbers: the grids, the autograd error, pybullet's step, where
    the loss has its minima, and what the gradient claim (``gradient_holds``, at
    ``tolerance``) means for a descent."""
    minima = landscape.minima
    if len(minima) == 1:
        sentence = f"The loss has a single minimum on the grid, at μ = {minima[0]:.3f}."
    else:
        sentence = (
            f"The loss has {len(minima)} local minima on the grid, at μ = "
            + ", ".join(f"{m:.3f}" for m in minima)
            + ": gradient descent finds the one its start leads to."
        )
    return {
        "n_landscape": plural(len(landscape.mu), "value of μ", "values of μ"),
        "n_bullet": plural(len(check.mu), "value of μ", "values of μ"),
        "mu_min": float(landscape.mu[0]),
        "mu_max": float(landscape.mu[-1]),
        "grad_error": Bounded(landscape.max_relative_gradient_error, 0, 1e-4),
        "bullet_step_pct": 100 * check.rel_step,
        "minima_sentence": sentence,
        "bullet_gradient_verdict": (
            "descending the model's loss moves μ the way pybullet's own loss would"
            if gradient_holds
            else f"the model's gradient misleads by more than the {100 * tolerance:.0f} % the "
            "book allows"
        ),
    }


def fit_prose(
    fit: FitResult,
    mu_init: float,
    lr: float,
    mu_true: float,
    mu_closed: float,
    landscape: Landscape,
    pitfall: DampingPitfall,
    fit_tolerance: float,
) -> dict[str, Any]:
    """The identification section's numbers: the descent's start (``mu_init``), step size
    (``lr``) and length, its μ̂ against the closed form's,
    which side of μ̂ the loss is steeper on, whether the loss has other minima, and whether
    Bullet's default damping would bias μ̂ by more than the identification claim allows
    (``fit_tolerance``, a fraction)."""
    fit_error = abs(fit.mu - mu_true) / mu_true
    closed_error = abs(mu_closed - mu_true) / mu_true
    if closed_error > 2 * fit_error:
        versus = f"and lands {closed_error / max(fit_error, 1e-12):.0f} times closer to μ⋆"
    elif closed_error > fit_error:
        versus = "and lands a little closer to μ⋆"
    else:
        versus = "yet lands no closer to μ⋆ in this run"
    below = landscape.mu < fit.mu
    slope = np.abs(landscape.grad_autograd)
    steeper_below = slope[below].max(initial=0) > slope[~below].max(initial=0)
    return {
        "mu_init": mu_init,
        "lr": lr,
        "lr_final_pct": 100 * sliding.LR_FINAL_FRACTION,
        "iterations": plural(len(fit.mus), "iteration", "iterations"),
        "mu_closed": mu_closed,
        "closed_error_pct": 100 * closed_error,
        "fit_vs_closed": versus,
        "damping_bias_pct": Bounded(pitfall.bias_pct, 0, 100),
        "damping_vs_claim": (
            "more than the identification claim allows"
            if pitfall.bias_pct / 100 > fit_tolerance
            else "still within what the identification claim allows"
        ),
        "flat_side": "above" if steeper_below else "below",
        "steep_side": "below" if steeper_below else "above",
        "other_side_expectation": (
            "The loss has no other minimum on the grid, so the descent should reach the same μ̂."
            if len(landscape.minima) == 1
            else "The loss has other minima on the grid, so the descent may stop at another one."
        ),
    }
