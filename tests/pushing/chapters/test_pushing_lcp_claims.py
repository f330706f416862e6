"""The LCP chapter's claims as functions: each holds on results that meet its criterion and
fails, with a reason, on results that do not."""

from __future__ import annotations

import numpy as np
import pytest

from physid.core.constants import GRAVITY
from physid.pushing.chapters import pushing_lcp as ex
from physid.pushing.chapters import pushing_lcp_claims as claims


def _formulation_gap(stretch=1e-9, difference=1e-8, lcp=0.0, rigid=0.0):
    return ex.FormulationGap(difference, stretch, 0.1, {"lcp": lcp, "rigid": rigid}, {}, None)


def _bullet_gaps(final_mm: dict[str, list[float]], minimum=0.0):
    gaps = []
    for name, values in (("hammer", final_mm), ("crimp", final_mm)):
        errors = {m: np.array([[0.0, 1e-3 * v] for v in values[m]]) for m in values}
        gaps.append(ex.BulletGap(name, 88, np.array([0.0, 1.0]), errors, np.ones(2), {}, None,
                                 {}, {m: minimum for m in values}, {}))
    return gaps


def test_rigid_claim_fails_beyond_a_micrometre():
    assert claims.rigid_claim(_formulation_gap()).holds
    fails = claims.rigid_claim(_formulation_gap(stretch=2e-6))
    assert not fails.holds and "micrometre" in fails.why
    fails.claim("quick", "pushing-solving")
    with pytest.raises(TypeError, match="^gap"):
        claims.rigid_claim("gap")


def test_coulomb_claim_is_judged_on_the_worst_direction():
    angles = np.linspace(0, np.pi / 4, 3)
    check = ex.SlidingCheck(1.0, 0.5, 1e-3, angles, {4: np.full(3, 1.0 / (2 * 0.5 * GRAVITY))})
    assert claims.coulomb_claim(check).holds
    square = ex.SlidingCheck(1.0, 0.5, 1e-3, angles,
                             {4: np.array([1.0, 1.2, 1.41]) / (2 * 0.5 * GRAVITY)})
    fails = claims.coulomb_claim(square)
    assert not fails.holds and "1.41 times" in fails.why
    assert "(axis 1.000, diagonal 1.410)" in fails.ours
    assert fails.cause == "open"  # no finer polygon measured beside it
    # Beside a 16-gon that goes as far as its geometry says (1/cos(π/16)): the paper's D.
    coulomb = 1.0 / (2 * 0.5 * GRAVITY)
    both = {4: np.array([1.0, 1.2, np.sqrt(2)]) * coulomb,
            16: np.array([1.0, 1.01, 1 / np.cos(np.pi / 16)]) * coulomb}
    paper = claims.coulomb_claim(ex.SlidingCheck(1.0, 0.5, 1e-3, angles, both))
    assert paper.cause == "paper" and paper.ablation == "pushing-sliding"
    assert "with 16 directions the same engine and step go at most 1.020 times" in paper.why
    paper.claim("default", "pushing-sliding")
    # A square that goes further than its geometry allows is the engine's problem: open.
    both[4] = np.array([1.0, 1.2, 1.6]) * coulomb
    assert claims.coulomb_claim(ex.SlidingCheck(1.0, 0.5, 1e-3, angles, both)).cause == "open"


def test_bullet_claim_uses_the_papers_bar_and_names_the_worst_object():
    models = list(ex.FRICTION_MODELS)
    gaps = _bullet_gaps({models[0]: [20.0, 22.0], models[1]: [5.0, 6.0], models[2]: [5.0, 7.0]})
    fails = claims.bullet_claim(models[0], gaps)
    assert fails.id == "song2020-engine-matches-pybullet-4-directions" and not fails.holds
    assert "The mean is 21.0 mm" in fails.why and f"The {models[1]} model gets 5.5 mm" in fails.why
    assert fails.cause == "paper" and fails.ablation == "pushing-bullet"  # 16 directions meet it
    fails.claim("default", "pushing-bullet")
    worse = _bullet_gaps({models[0]: [20, 22], models[1]: [16, 18], models[2]: [16, 17]})
    assert claims.bullet_claim(models[0], worse).cause == "open"
    assert claims.bullet_claim(models[1], worse).cause == "open"  # not the paper's model
    holds = claims.bullet_claim(models[1], gaps)
    assert holds.holds and "over 4 pushes" in holds.ours
    with pytest.raises(ValueError, match="^model"):
        claims.bullet_claim("8 directions", gaps)


def test_finger_claim_fails_on_a_pulling_step():
    models = list(ex.FRICTION_MODELS)
    gaps = _bullet_gaps({m: [1.0] for m in models})
    holds = claims.finger_claim(_formulation_gap(), gaps, 2)
    assert holds.holds and "(rigid, 8 pushes)" in holds.ours
    fails = claims.finger_claim(_formulation_gap(rigid=-1e-6), gaps, 2)
    assert not fails.holds and "-1.0e-06" in fails.why
    assert claims.finger_claim(_formulation_gap(), _bullet_gaps({m: [1.0] for m in models}, -2e-7),
                           2).numbers["min_normal_all"] == -2e-7
