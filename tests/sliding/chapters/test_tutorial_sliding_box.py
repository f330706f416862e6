"""The tutorial's driver: what the prose says about each result, each way it can come out."""

from __future__ import annotations

import numpy as np
import pytest

from physid.book.display import Bounded, glue_all
from physid.sliding import model as sliding
from physid.sliding.chapters import tutorial_sliding_box as tutorial
from physid.sliding.model import BulletGradientCheck, FitResult, Landscape

BOX = dict(half_extents=(0.1, 0.1, 0.01), mass=1.0, duration=1.0)


@pytest.fixture(scope="module")
def clean():
    return sliding.bullet_slide(mu_box=0.5, mu_plane=0.6, v0=2.0, **BOX)


def landscape(loss, grad):
    mu = np.linspace(0.1, 0.5, len(loss))
    return Landscape(mu, np.asarray(loss), np.asarray(grad), np.asarray(grad))


def test_setup_prose_states_the_slide(clean):
    prose = tutorial.setup_prose(BOX, 0.5, 0.6, 2.0, 1e-3, clean)
    assert prose["box_size"] == "20 × 20 × 2" and prose["duration_text"] == "one second"
    assert prose["mu_true"] == Bounded(0.3, 0, sliding.BULLET_MAX_FRICTION)
    assert prose["bullet_hz"] == 240 and prose["sigma_mm"] == 1.0
    assert prose["n_samples"].endswith("sample times")
    assert (
        tutorial.setup_prose({**BOX, "duration": 2.5}, 0.5, 0.6, 2.0, 0, clean)["duration_text"]
        == "2.5 s"
    )


def test_damping_biases_mu_upwards(clean):
    pitfall = tutorial.damping_pitfall(clean, BOX, 0.5, 0.6, 2.0, points=201)
    assert abs(pitfall.mu_undamped - 0.3) < 0.01
    assert pitfall.mu_damped > pitfall.mu_undamped and pitfall.bias_pct > 0


@pytest.mark.parametrize("follows", [True, False])
def test_model_prose_says_whom_pybullet_follows(clean, follows):
    distances = {"model": 0.68, "closed": 0.67, "bullet": 0.68}
    prose = tutorial.model_prose(clean, 2.0, np.logspace(-4, -1, 7), 1.0, distances, follows)
    assert prose["dt_min_ms"] == pytest.approx(0.1) and prose["dt_max_s"] == pytest.approx(0.1)
    assert prose["convergence_slope"] == Bounded(1.0, 0.9, 1.1)
    assert prose["bullet_follows"].startswith("pybullet stops" if follows else "pybullet is nearer")


def test_gradient_prose_counts_minima_and_reads_the_verdict():
    check = BulletGradientCheck(np.linspace(0.1, 0.5, 3), np.zeros(3), np.zeros(3), 1e-3)
    one = tutorial.gradient_prose(landscape([3, 1, 2], [-1, 0, 1]), check, True, 0.05)
    assert one["minima_sentence"] == "The loss has a single minimum on the grid, at μ = 0.300."
    assert one["n_landscape"] == "3 values of μ" and one["bullet_step_pct"] == 0.1
    assert one["bullet_gradient_verdict"].startswith("descending")
    two = tutorial.gradient_prose(landscape([1, 2, 0], [1, 0, -1]), check, False, 0.05)
    assert two["minima_sentence"].startswith(
        "The loss has 2 local minima on the grid, at μ = 0.100"
    )
    assert "more than the 5 % the book allows" in two["bullet_gradient_verdict"]


@pytest.mark.parametrize(
    ("mu_closed", "phrase"),
    [(0.33, "and lands 10 times closer"), (0.3045, "a little closer"), (0.301, "no closer")],
)
def test_fit_prose_compares_the_descent_with_the_closed_form(mu_closed, phrase):
    fit = FitResult(0.303, np.array([0.1, 0.303]), np.array([1.0, 0.0]))
    land = landscape([4, 1, 2], [-8, 0, 1])  # steeper below μ̂
    pitfall = tutorial.DampingPitfall(0.3, 0.31)
    prose = tutorial.fit_prose(fit, 0.1, 0.05, 0.3, mu_closed, land, pitfall, 0.01)
    assert phrase in prose["fit_vs_closed"]
    assert (prose["flat_side"], prose["steep_side"]) == ("above", "below")
    assert prose["mu_init"] == 0.1 and prose["iterations"] == "2 iterations"
    assert prose["damping_bias_pct"].value == pytest.approx(100 / 30)
    assert prose["damping_vs_claim"] == "more than the identification claim allows"
    small = tutorial.fit_prose(
        fit, 0.1, 0.05, 0.3, mu_closed, land, tutorial.DampingPitfall(0.3, 0.3001), 0.01
    )
    assert small["damping_vs_claim"].startswith("still within")


def test_glue_all_glues_text_bounded_and_plain_numbers(monkeypatch):
    import myst_nb

    glued = {}
    monkeypatch.setattr(myst_nb, "glue", lambda n, v, display=True: glued.update({n: v}))
    glue_all({"a": "text", "b": Bounded(0.5, 0, 1), "c": np.float32(2)})
    assert glued == {"a": "text", "b": 0.5, "c": 2.0}
    with pytest.raises(ValueError, match="value for 'd' must be <= 1"):
        glue_all({"d": Bounded(2.0, 0, 1)})
    with pytest.raises(TypeError, match="values must be a mapping"):
        glue_all([("a", 1.0)])
