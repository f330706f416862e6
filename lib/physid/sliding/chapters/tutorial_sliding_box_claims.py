"""The claims of the sliding-box tutorial (``book/tutorial_sliding_box.md``), as functions.

Each function takes the chapter's results and returns a :class:`~physid.book.claims.Verdict`
that the chapter records with :func:`~physid.book.claims.record`: the criterion lives here,
where a test can show that it holds and that it can fail.
"""

from __future__ import annotations

from physid.book.claims import Verdict
from physid.core.validate import check_number, check_positive

__all__ = [
    "FIT_TOLERANCE",
    "GRADIENT_TOLERANCE",
    "gradient_claim",
    "identification_claim",
    "stopping_distance_claim",
]

#: The largest relative error of the identified μ that the identification claim accepts.
FIT_TOLERANCE = 0.01
#: The largest gap between the model's gradient and pybullet's finite differences, relative to
#: the largest finite difference, that the gradient claim accepts.
GRADIENT_TOLERANCE = 0.05


def stopping_distance_claim(d_bullet: float, d_model: float, d_closed: float) -> Verdict:
    """pybullet's stopping distance ``d_bullet`` is nearer the semi-implicit model's ``d_model``
    than the continuous law's ``d_closed`` (all in m) — Eq. (tut-stopping-distance)."""
    d_bullet, d_model, d_closed = (
        check_number(name, value)
        for name, value in (("d_bullet", d_bullet), ("d_model", d_model), ("d_closed", d_closed))
    )
    gap_model, gap_closed = abs(d_bullet - d_model), abs(d_bullet - d_closed)
    holds = gap_model < gap_closed
    return Verdict(
        "tutorial-stopping-distance",
        "pybullet's sliding box stops where the semi-implicit Euler model stops, about v₀Δt/2 "
        "short of the continuous-time distance v₀²/(2μg), rather than at the continuous distance.",
        paper=f"model {d_model:.4f} m, continuous law {d_closed:.4f} m",
        ours=f"pybullet {d_bullet:.4f} m ({1e3 * gap_model:.2f} mm from the model, "
        f"{1e3 * gap_closed:.2f} mm from the continuous law)",
        criterion="|d_pybullet − d_model| < |d_pybullet − d_continuous|",
        holds=holds,
        cause="open",
        why=""
        if holds
        else "pybullet's stopping distance is nearer the continuous law, so its time stepping "
        "differs from the semi-implicit scheme of the model.",
        numbers={"bullet_gap_mm": 1e3 * gap_model, "bullet_closed_gap_mm": 1e3 * gap_closed},
    )


def gradient_claim(max_relative_gap: float, n_values: int, mu_min: float, mu_max: float,
                   tolerance: float = GRADIENT_TOLERANCE) -> Verdict:
    """The model's autograd gradient matches pybullet's finite differences over the range of μ:
    their largest gap, relative to the largest finite difference, is at most ``tolerance``."""
    gap = check_number("max_relative_gap", max_relative_gap, low=0.0)
    tolerance = check_positive("tolerance", tolerance)
    holds = gap <= tolerance
    return Verdict(
        "tutorial-gradient-matches-fd",
        "The autograd gradient of the model's trajectory loss matches the finite-difference "
        "gradient of the same loss with pybullet's slide in place of the model, over the whole "
        "range of μ.",
        paper="equal up to the model's mismatch with pybullet",
        ours=f"max relative gap {100 * gap:.2f} % over {n_values} values of μ in "
        f"[{mu_min:g}, {mu_max:g}]",
        criterion=f"max |autograd − pybullet FD| / max |pybullet FD| ≤ {100 * tolerance:g} %",
        holds=holds,
        cause="open",
        why=""
        if holds
        else "the model's rollout departs from pybullet's enough to change the gradient's size.",
        numbers={"bullet_gap_pct": 100 * gap, "gradient_tolerance_pct": 100 * tolerance},
    )


def identification_claim(mu_fit: float, mu_true: float,
                         tolerance: float = FIT_TOLERANCE) -> Verdict:
    """Gradient descent identifies pybullet's friction coefficient ``mu_true`` within
    ``tolerance`` (relative) — the fit of Eq. (tut-loss)."""
    mu_fit = check_positive("mu_fit", mu_fit)
    mu_true = check_positive("mu_true", mu_true)
    tolerance = check_positive("tolerance", tolerance)
    error = abs(mu_fit - mu_true) / mu_true
    holds = error <= tolerance
    return Verdict(
        "tutorial-identified-mu",
        "Gradient descent through the differentiable rollout identifies the friction "
        "coefficient of the noisy pybullet slide, the product of the two bodies' coefficients.",
        paper=f"{mu_true:.3f} (pybullet μ_box·μ_plane)",
        ours=f"{mu_fit:.4f} ({100 * error:.2f} % off)",
        criterion=f"|μ̂ − μ⋆| / μ⋆ ≤ {100 * tolerance:g} %",
        holds=holds,
        cause="open",
        why=""
        if holds
        else "the descent stopped short of the minimum of the loss, or the noise moved it.",
        numbers={"mu_fit": mu_fit, "fit_error_pct": 100 * error},
    )
