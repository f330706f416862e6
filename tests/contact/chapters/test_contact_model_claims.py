"""The contact-model chapter's claims as functions: each holds on results that meet its
criterion and fails, with a reason, on results that do not."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import torch

from physid.contact.chapters import contact_model_claims as claims
from physid.contact.chapters.contact_model import ImpactStudy


def _study(task, newton_gain, poisson_gain=0.0):
    reach = torch.ones(4, dtype=torch.float64)
    newton = torch.tensor([newton_gain, -1.0, -1.0, -1.0], dtype=torch.float64)
    poisson = torch.tensor([poisson_gain, -1.0, -1.0, -1.0], dtype=torch.float64)
    return ImpactStudy(task, 0.5, 1.0, poisson, newton, reach)


def _valid(verdict):
    verdict.claim("quick", "some-section")
    return verdict


def test_newton_gains_and_poisson_does_not():
    studies = [_study("CP3", 0.1), _study("Gyro", 0.2)]
    assert _valid(claims.newton_claim(studies, studies, 0.5, 1.0)).holds
    no_gain = _valid(claims.newton_claim([_study("CP3", 0.1), _study("Gyro", -1.0)], studies,
                                         0.5, 1.0))
    assert not no_gain.holds and "none of the recorded impacts of Gyro" in no_gain.why
    poisson = _valid(claims.newton_claim([_study("CP3", 0.1, 1e-6), _study("Gyro", 0.2)],
                                         studies, 0.5, 1.0))
    assert not poisson.holds and "Poisson's largest gain is 1.0e-06" in poisson.why


def test_equality_needs_95_percent():
    row = {"large contacts": 100.0, "other equality fraction": 0.5}
    assert _valid(claims.equality_claim({**row, "large equality fraction": 0.96})).holds
    fails = _valid(claims.equality_claim({**row, "large equality fraction": 0.9}))
    assert not fails.holds and "At 10.0 %" in fails.why


def test_penetration_is_judged_against_both_bounds():
    base = {"without": np.array([0.0, 0.01]), "equilibrium": 1e-3}
    holds = _valid(claims.penetration_claim({**base, "with": np.array([0.0, 1e-3])}))
    assert holds.holds and holds.numbers == {"pen_with_mm": 1.0, "pen_without_mm": 10.0}
    assert not _valid(claims.penetration_claim({**base, "with": np.array([0.0, 2e-3])})).holds


def test_elastic_energy_names_what_fails():
    row = {"task": "Gyro-e", "isolated, largest |ΔKE|/KE": 1e-12,
           "simultaneous, largest loss/KE": 1e-3, "with compensation, largest gain/KE": 1e-3,
           "with compensation, largest |ΔKE|/KE": 1e-3}
    assert _valid(claims.elastic_claim([row])).holds
    fails = _valid(claims.elastic_claim([{**row, "with compensation, largest gain/KE": 0.05,
                                          "with compensation, largest |ΔKE|/KE": 0.05}]))
    assert not fails.holds and "in Gyro-e, above 1 %" in fails.why


def test_cmr_needs_non_unique_problems_to_compare():
    row = {"non-unique": 3, "CM as stated compression impulse": 1e-3, "CMr final velocity": 1e-9}
    assert _valid(claims.cmr_claim(row)).holds
    none = _valid(claims.cmr_claim({**row, "non-unique": 0, "CMr final velocity": math.nan}))
    assert not none.holds and "nothing to compare" in none.why and none.numbers["cmr_final"] == 0
    assert not _valid(claims.cmr_claim({**row, "CMr final velocity": 1e-3})).holds


def test_differentiable_to_1e_4():
    fd = {"max relative error": 1e-6, "problems": 9}
    assert _valid(claims.differentiable_claim(fd, 0.0)).holds
    fails = _valid(claims.differentiable_claim({"max relative error": 1e-3, "problems": 9}, 0.0))
    assert not fails.holds and "1.0e-03" in fails.why


class _Chunks:
    def __init__(self, fraction: float, n: int):
        self.collision_fraction, self.n = fraction, n

    def __len__(self) -> int:
        return self.n


def test_half_collide_says_why_a_task_is_outside():
    def run(fraction, reach=1.0, n=100):
        data = SimpleNamespace(train=_Chunks(fraction, n), trajectories_with_collision=reach)
        return SimpleNamespace(data=data)

    verdict, reasons = claims.half_collide_claim({"BP5": run(0.5), "CP3": run(0.45)})
    assert _valid(verdict).holds and reasons == []
    verdict, reasons = claims.half_collide_claim({"BP5": run(0.5), "Gyro": run(0.2, reach=0.3)})
    assert not _valid(verdict).holds and reasons[0].startswith("Gyro: 20 %")
    assert "only 30 % of its trajectories" in verdict.why
