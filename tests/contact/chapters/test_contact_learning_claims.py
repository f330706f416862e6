"""The learning chapter's claims as functions: each holds on results that meet its criterion and
fails, with a reason, on results that do not."""

from __future__ import annotations

import math

import pytest

from physid.contact.chapters import contact_learning_claims as claims
from physid.core.bench import Timing


def _valid(verdict):
    verdict.claim("quick", "some-section")
    return verdict


def _comparison(*ratios):
    tasks = ("BP5", "CP3-e")[: len(ratios)]
    return [{"task": task, "ratio": ratio} for task, ratio in zip(tasks, ratios, strict=True)]


def test_cm_beats_baselines_on_every_task():
    verdict = _valid(claims.beats_baselines_claim(_comparison(3.0, 1.5), ("BP5", "CP3-e"), 2, 4000))
    assert verdict.holds and verdict.numbers == {"beat_tasks": 2, "beat_min": 1.5, "beat_max": 3.0}
    losing = _valid(claims.beats_baselines_claim(_comparison(3.0, 0.5), ("BP5", "CP3-e"), 2, 4000))
    assert not losing.holds and losing.why == (
        "A baseline is as good or better on CP3-e after 2 optimiser steps (the paper: 4000)."
    )
    missing = _valid(claims.beats_baselines_claim(_comparison(3.0), ("BP5", "CP3-e"), 2, 4000))
    assert not missing.holds and "no baseline was evaluated on CP3-e" in missing.why


def _coefficients(task, model, mu, cor, true_mu=0.0, true_cor=1.0, theirs=(math.nan, math.nan),
                  start=0.5):
    return {"task": task, "model": model, "μ": mu, "true μ": true_mu, "e": cor,
            "true e": true_cor, "authors' μ": theirs[0], "authors' e": theirs[1],
            "start e": start}


def test_learned_mu_e_is_judged_against_the_truth_or_where_the_authors_missed_it_theirs():
    rows = [_coefficients("CP3-e", "CM-CD-CLNN", 0.01, 0.98, theirs=(0.0, 1.0)),
            _coefficients("Gyro", "CM-CD-CLNN", 0.9, 0.65, 0.1, 0.8, theirs=(0.8764, 0.6569)),
            _coefficients("Gyro", "CMr-CD-CLNN", 0.1, 0.881, 0.1, 0.8, theirs=(0.0994, 0.8918))]
    assert [claims.coefficient_judgement(r) for r in rows] == ["truth", "authors'", "authors'"]
    verdict, gyro = claims.learned_mu_e_claim(rows, 2, 0.01)
    assert _valid(verdict).holds and gyro == "CM-CD-CLNN on Gyro: μ = 0.900, e = 0.650"
    assert verdict.numbers == {"coef_tol": 0.05, "coef_ok": 1, "coef_authors": 2,
                               "coef_total": 3, "e_reach": pytest.approx(2 * 0.01 / 6)}
    # CM that learns the gyroscope's truth where the authors' did not is right too.
    assert claims.coefficient_judgement({**rows[1], "μ": 0.11, "e": 0.79}) == "truth"
    # Near the authors' value where the authors reached the truth is not enough.
    near_theirs = _coefficients("CP3", "CM-CD-CLNN", 0.46, 0.0, 0.5, 0.0, theirs=(0.52, 0.0))
    assert claims.coefficient_judgement(near_theirs, tol=0.03) == "missed"
    rows[0] = _coefficients("CP3-e", "CM-CD-CLNN", 0.006, 0.595, theirs=(0.0, 1.0))
    rows[2] = _coefficients("Gyro", "CMr-CD-CLNN", 0.1, 0.7, 0.1, 0.8, theirs=(0.0994, 0.8918))
    fails, _ = claims.learned_mu_e_claim(rows, 2, 0.01)
    # Two steps move e by at most 0.0033: both truths were out of reach of their starts.
    assert not _valid(fails).holds and fails.cause == "setup" and fails.why == (
        "Every pair outside the tolerance has its μ right and a restitution that could not get "
        "there in 2 steps: e = r/6 + ½ moves at most 0.00333 in 2 AdamW steps at "
        "rate 0.01, and each started further from its truth: CM-CD-CLNN on CP3-e from e = "
        "0.500 (true 1) to 0.595, a move of 0.095; CMr-CD-CLNN on Gyro from e = 0.500 (true "
        "0.8) to 0.700, a move of 0.200. The book's training is too short for them: at least "
        "300 steps at the constant rate 0.01 would let every one get there."
    )
    decayed, _ = claims.learned_mu_e_claim(rows, 2, 0.01, 0.001)
    assert decayed.numbers["e_reach"] == pytest.approx(2 * 0.011 / 12)
    assert "in 2 AdamW steps at rate 0.01 decaying to 0.001" in decayed.why
    # With the time to get there, or with μ wrong, the cause is not separated.
    longer, _ = claims.learned_mu_e_claim(rows, 2000, 0.01)
    assert longer.cause == "open" and longer.why == (
        "Outside the tolerance of the truth and of the authors' value: CM-CD-CLNN on CP3-e "
        "(μ = 0.006, e = 0.595, 2000 of at most 2000 optimiser steps); CMr-CD-CLNN on Gyro "
        "(μ = 0.100, e = 0.700, 2000 of at most 2000 optimiser steps)."
    )
    # A run the plateau rule stopped says how far it went.
    stopped = [{**r, "steps": 452} for r in rows]
    assert "e = 0.595, 452 of at most 2000 optimiser steps" in claims.learned_mu_e_claim(
        stopped, 2000, 0.01)[0].why
    # A run trained again with one setting changed (the whole schedule) that the rule accepts
    # separates the cause; one still outside, or a missed pair without such a run, does not.
    rope = {**_coefficients("Rope", "CMr-CD-CLNN", math.nan, 0.059, 0.0, 0.0,
                            theirs=(math.nan, 0.444)), "steps": 452}
    again = {**rope, "e": 0.027, "steps": 800}
    fixed, _ = claims.learned_mu_e_claim([rope], 800, 0.01, ablation=[again])
    assert fixed.cause == "setup" and fixed.why.endswith(
        "(μ = nan, e = 0.059, 452 of at most 800 optimiser steps). Trained again with one "
        "setting of the grid changed: CMr-CD-CLNN on Rope learns μ = nan, e = 0.027 in 800 "
        "steps, within the tolerance. The grid's training of those runs is what misses them.")
    still, _ = claims.learned_mu_e_claim([rope], 800, 0.01, ablation=[{**again, "e": 0.2}])
    assert still.cause == "open" and still.why.endswith("in 800 steps, still outside it.")
    other = claims.learned_mu_e_claim([rope, {**rows[1], "μ": 0.3}], 800, 0.01,
                                      ablation=[again])[0]
    assert other.cause == "open"
    rows[2] = {**rows[2], "μ": 0.3}
    assert claims.learned_mu_e_claim(rows, 2, 0.01)[0].cause == "open"
    assert not _valid(claims.learned_mu_e_claim([], 2, 0.01)[0]).holds
    assert claims.learned_mu_e_claim([], 2, 0.01)[1] == "not trained at this scale"
    with pytest.raises(ValueError, match="tol"):
        claims.coefficient_judgement(rows[0], tol=0.0)


def test_mass_ratios_within_one_percent_and_the_bd5_sentence():
    bp5 = [{"model": "CM-CD-CLNN", "largest error": 0.004},
           {"model": "IN-CP-SP", "largest error": 0.5}]
    verdict, bd5 = claims.mass_ratio_claim(bp5, [], 2, 4000)
    assert _valid(verdict).holds and bd5 == "BD5 is not trained at this scale."
    bp5[0]["largest error"] = 0.9229
    bd5_rows = [{"model": "CM-CD-CLNN", "largest error": 0.2}]
    fails, bd5 = claims.mass_ratio_claim(bp5, bd5_rows, 2, 4000)
    assert not _valid(fails).holds and fails.numbers == {"bp5_worst": pytest.approx(92.29)}
    assert fails.why == ("The largest error is 92.29 % after at most 2 optimiser steps (the "
                         "paper: 4000).")
    # With models on both sides of the tolerance, the why names each.
    both = bp5 + [{"model": "CM-CD-CHNN", "largest error": 0.0004}]
    split, _ = claims.mass_ratio_claim(both, [], 2, 4000)
    assert split.why.endswith(" Outside the tolerance: CM-CD-CLNN 92.29 %; within it: "
                              "CM-CD-CHNN 0.040 %.")
    assert fails.cause == "open"
    # Trained under the ablation's rule the ratios are right: the grid's training fails it.
    ablation = [{"task": "BP5", "model": "CM-CD-CLNN", "rule": "grid", "steps": 2,
                 "trajectories": 100, "schedule": "constant 0.01, best",
                 "largest mass-ratio error (%)": 92.29},
                {"task": "BP5", "model": "CM-CD-CLNN", "rule": "ablation", "steps": 8,
                 "trajectories": 100, "schedule": "cosine 0.01 → 0.001, last",
                 "largest mass-ratio error (%)": 0.5}]
    setup, _ = claims.mass_ratio_claim(bp5, bd5_rows, 2, 4000, ablation)
    assert setup.cause == "setup" and setup.why.endswith(
        " Trained at most 8 steps (cosine 0.01 → 0.001, last) on 100 training trajectories, "
        "the largest errors are: CM-CD-CLNN 0.50 %: the grid's training rule is what fails "
        "the ratios.")
    ablation[1]["largest mass-ratio error (%)"] = 3.0
    still, _ = claims.mass_ratio_claim(bp5, bd5_rows, 2, 4000, ablation)
    assert still.cause == "open"
    assert still.why.endswith("the largest errors are: CM-CD-CLNN 3.00 %.")
    # More trajectories under the grid's rule bring the model within the tolerance: the
    # grid's number of trajectories fails it, and each ablation has its sentence.
    data = [dict(ablation[0], rule="grid"),
            dict(ablation[0], rule="ablation", trajectories=800, steps=2,
                 **{"largest mass-ratio error (%)": 0.25})]
    both_kinds, _ = claims.mass_ratio_claim(bp5, bd5_rows, 2, 4000, ablation + data)
    assert both_kinds.cause == "setup" and both_kinds.why.endswith(
        "the largest errors are: CM-CD-CLNN 3.00 %. Trained at most 2 steps (constant 0.01, "
        "best) on 800 training trajectories, the largest errors are: CM-CD-CLNN 0.25 %: the "
        "grid's 100 training trajectories is what fails the ratios.")
    # An ablation on another task, or on models that do not fail, leaves the cause open.
    elsewhere = [dict(r, task="BD5") for r in data]
    assert claims.mass_ratio_claim(bp5, bd5_rows, 2, 4000, elsewhere)[0].cause == "open"
    # A failing model the ablation did not train leaves the cause open.
    ablation[1]["largest mass-ratio error (%)"] = 0.5
    both = [*bp5, {"model": "CMr-CD-CLNN", "largest error": 0.06}]
    assert claims.mass_ratio_claim(both, bd5_rows, 2, 4000, ablation)[0].cause == "open"
    assert "20.00 %: the ratios are not recovered either" in bd5


def _run(task, model, drift, truth_drift=0.0, cor=(1.0,)):
    """A training result whose prediction moves the energy by ``drift`` (initial energy 1)."""
    return {
        "job": {"task": task, "model": model},
        "evaluation": {"energy_pred": [[1.0, 1.0 + drift]],
                       "energy_true": [[1.0, 1.0 + truth_drift]], "steps": 100},
        "learned": {"cor": list(cor)},
    }


def test_energy_kept_by_cm_and_not_by_the_baselines():
    grid = [_run("CP3-e", "CM-CD-CLNN", 0.005, 0.004), _run("CP3-e", "IN-CP-SP", 0.5)]
    verdict = _valid(claims.energy_kept_claim(grid, ("CP3-e",)))
    assert verdict.holds and verdict.numbers == pytest.approx({"cm_drift": 0.5, "base_drift": 50.0})
    grid[0] = _run("CP3-e", "CM-CD-CLNN", 0.6, 0.004, cor=(0.6,))
    fails = _valid(claims.energy_kept_claim(grid, ("CP3-e",)))
    assert not fails.holds and fails.why == (
        "CP3-e: CM drift 0.6 (learned e 0.60–0.60, true 1), truth 0.004, baselines 0.5–0.5."
    )
    assert fails.cause == "open"
    # Trained under the ablation's rule CM keeps the energy: the grid's training fails it.
    ablation = [{"task": "CP3-e", "model": "CM-CD-CLNN", "rule": "grid", "steps": 2,
                 "schedule": "s", "e": 0.6, "energy drift (%)": 60.0},
                {"task": "CP3-e", "model": "CM-CD-CLNN", "rule": "ablation", "steps": 8,
                 "schedule": "cosine", "e": 1.0, "energy drift (%)": 1.0},
                {"task": "CP3-e", "model": "CMr-CD-CLNN", "rule": "ablation", "steps": 8,
                 "schedule": "cosine", "e": 1.0, "energy drift (%)": 5.0}]
    setup = _valid(claims.energy_kept_claim(grid, ("CP3-e",), ablation))
    assert setup.cause == "setup" and setup.why.endswith(
        " Trained 8 steps (cosine), CM-CD-CLNN on CP3-e learns e = 1.00 and drifts 1 %; "
        "trained 8 steps (cosine), CMr-CD-CLNN on CP3-e learns e = 1.00 and drifts 5 %.")
    ablation[1]["energy drift (%)"] = 30.0
    assert _valid(claims.energy_kept_claim(grid, ("CP3-e",), ablation)).cause == "open"
    # CMr is held to no bound (the paper: it loses energy at each collision).
    lossy = [*grid, _run("CP3-e", "CMr-CD-CLNN", 0.05, 0.004)]
    kept = _valid(claims.energy_kept_claim([_run("CP3-e", "CM-CD-CLNN", 0.005, 0.004),
                                            *lossy[1:]], ("CP3-e",)))
    assert kept.holds and "CMr up to 5 %" in kept.ours
    alone = _valid(claims.energy_kept_claim(grid[:1], ("CP3-e",)))
    assert not alone.holds and alone.ours == "not trained at this scale"
    assert "no CM model or no baseline trained" in alone.why


def _efficiency(cm_small, base_large):
    return [{"model": "CM-CD-CLNN", "n_train": 8, "error": cm_small},
            {"model": "IN-CP-SP", "n_train": 8, "error": 2.0},
            {"model": "CM-CD-CLNN", "n_train": 16, "error": 0.5},
            {"model": "IN-CP-SP", "n_train": 16, "error": base_large}]


def test_sample_efficiency_compares_the_fewest_with_the_most():
    verdict = _valid(claims.sample_efficient_claim(_efficiency(1.08, 1.2), 2, 1000))
    assert verdict.holds and verdict.ours == "CM-CD-CLNN at 8: 1.08; best baseline at 16: 1.2"
    fails = _valid(claims.sample_efficient_claim(_efficiency(1.08, 1.0), 2, 1000))
    assert not fails.holds and fails.why == (
        "At this scale the largest training set is 16 trajectories (the paper: 800), after 2 "
        "epochs (the paper: 1000)."
    )


def test_linear_in_size_up_to_a_slope_of_1_2():
    timings = {10: Timing((1.0, 1.1)), 40: Timing((8.0, 8.2))}
    contacts = {10: 2.0, 40: 6.5}
    verdict = _valid(claims.linear_in_size_claim(timings, 1.0, contacts))
    assert verdict.holds and verdict.numbers["contacts_large"] == 6.5
    assert verdict.numbers["nodes_small"] == 10
    fails = _valid(claims.linear_in_size_claim(timings, 1.5, contacts))
    assert not fails.holds and fails.why.startswith("Seconds per iteration: 1.05 at 10 nodes")
    assert "a sample with contacts has 2.0 at 10 nodes, 6.5 at 40 nodes" in fails.why


@pytest.mark.usefixtures("float64_default")
def test_rope_contacts_counts_the_contacts_of_a_sample_with_contacts():
    contacts = claims.rope_contacts((8, 16), batch=2, seed=0)
    assert list(contacts) == [8, 16]
    # A mean over the samples with contacts, without the padding: at least one each, and at
    # most the candidates (every node against the ground).
    assert all(1.0 <= c <= n for n, c in contacts.items())


def _lcp(lcp, baseline):
    return {"task": "CP3-e", "CM data": 1.4, "LCP data": lcp, "best baseline, CM data": baseline}


def test_lcp_data_beats_the_baselines():
    assert _valid(claims.robust_lcp_claim([_lcp(1.0, 1.2)])).holds
    fails = _valid(claims.robust_lcp_claim([_lcp(1.4, 1.2)]))
    assert not fails.holds and fails.why == (
        "A baseline trained on CM data is better on CP3-e (1.2 against 1.4 trained on LCP data, "
        "1.4 on CM data).")
    assert fails.ours == "CP3-e: 1.4 (CM data 1.4)"
    empty = _valid(claims.robust_lcp_claim([]))
    assert not empty.holds and "No task was trained on LCP data" in empty.why


def _noise(task, sigma, mu, cor):
    return {"task": task, "σ": sigma, "true μ": 0.0, "μ": mu, "true e": 1.0, "e": cor}


def test_noise_judged_at_the_smallest_sigma_only():
    rows = [_noise("CP3-e", 0.01, 0.02, 0.95), _noise("CP3-e", 0.05, 0.0, 0.04)]
    verdict = _valid(claims.robust_noise_claim(rows))
    assert verdict.holds and verdict.numbers == {"noise_low": 0.01, "noise_tol": 0.1}
    rows[0] = _noise("CP3-e", 0.01, 0.006, 0.595)
    fails = _valid(claims.robust_noise_claim(rows))
    assert not fails.holds and fails.why == "Outside the tolerance at σ = 0.01: CP3-e."


def test_a_mu_that_acts_on_nothing_is_not_judged():
    row = _coefficients("Rope", "CM-CD-CLNN", math.nan, 0.02, 0.0, 0.0, theirs=(0.0, 0.2322))
    assert claims.coefficient_judgement(row) == "truth"
    assert claims.coefficient_judgement({**row, "e": 0.25}) == "authors'"
    assert claims.coefficient_judgement({**row, "e": 0.6}) == "missed"


def test_the_grid_rope_counts_as_the_rope_task():
    rows = [{"task": "Rope50", "ratio": 2.0}, {"task": "BP5", "ratio": 3.0}]
    verdict = _valid(claims.beats_baselines_claim(rows, ("BP5", "Rope"), 2, 4000))
    assert verdict.holds and verdict.why == ""
    missing = _valid(claims.beats_baselines_claim(rows[1:], ("BP5", "Rope"), 2, 4000))
    assert missing.why == "No CM model or no baseline was evaluated on Rope."
