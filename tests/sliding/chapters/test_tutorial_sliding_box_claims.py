"""The tutorial's claims as functions: each holds on results that meet its criterion, fails on
results that do not (with a reason), and refuses bad input."""

from __future__ import annotations

import pytest

from physid.book.claims import Verdict
from physid.sliding.chapters import tutorial_sliding_box_claims as claims


def _valid(verdict: Verdict) -> Verdict:
    verdict.claim("quick", "tut-model")  # every field passes the ledger's checks
    return verdict


def test_stopping_distance_follows_the_nearer_law():
    near_model = _valid(claims.stopping_distance_claim(0.5080, 0.5079, 0.5102))
    assert near_model.holds and not near_model.why
    assert near_model.numbers["bullet_gap_mm"] == pytest.approx(0.1)
    near_law = _valid(claims.stopping_distance_claim(0.5101, 0.5079, 0.5102))
    assert not near_law.holds and "continuous law" in near_law.why


def test_gradient_claim_has_a_tolerance():
    assert _valid(claims.gradient_claim(0.049, 20, 0.05, 1.0)).holds
    fails = _valid(claims.gradient_claim(0.051, 20, 0.05, 1.0))
    assert not fails.holds and fails.why
    assert fails.numbers == {"bullet_gap_pct": pytest.approx(5.1), "gradient_tolerance_pct": 5.0}
    assert "over 20 values of μ in [0.05, 1]" in fails.ours


def test_identification_claim_within_one_percent():
    holds = _valid(claims.identification_claim(0.3027, 0.3))
    assert holds.holds and holds.ours == "0.3027 (0.90 % off)"
    fails = _valid(claims.identification_claim(0.31, 0.3))
    assert not fails.holds and "descent" in fails.why


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: claims.stopping_distance_claim(float("nan"), 0.5, 0.5), "d_bullet"),
        (lambda: claims.gradient_claim(-0.1, 20, 0.05, 1.0), "max_relative_gap"),
        (lambda: claims.identification_claim(0.0, 0.3), "mu_fit"),
        (lambda: claims.identification_claim(0.3, 0.3, tolerance=0), "tolerance"),
    ],
)
def test_bad_results_are_refused_naming_them(call, name):
    with pytest.raises((ValueError, TypeError), match=rf"^{name}\b"):
        call()
