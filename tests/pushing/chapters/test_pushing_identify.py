"""The identification study's jobs (:mod:`physid.pushing.chapters.pushing_identify`): the same
numbers locally and on a Dask cluster, the summaries behind the chapter's claims, and a Part II
estimator on the pushing target."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from physid.inference.estimators import make_estimator
from physid.pushing import load_object, random_pushes, rectangle
from physid.pushing.chapters.pushing_identify import (
    HEADLINE_METHODS,
    REGION_FEATURES,
    feature_contrast,
    friction_models,
    laplace_spread,
    log_slope,
    run_protocol,
    schedule_ablation,
    schedule_options,
    shows_feature,
    steps_to,
    uncertainty_maps,
    uncertainty_target,
    world_ablation,
)
from physid.pushing.observations import observe
from physid.pushing.target import PushingTarget, identifiable_map

F64 = torch.float64


def _numbers(runs):
    """Everything a run reports except wall times."""
    return [(r.object, r.method, r.used_simulations, r.simulations.tolist(), r.loss.tolist(),
             r.test_error.tolist(), r.identified_map.tolist(), r.predicted.tolist())
            for r in runs]


def test_a_sweep_on_a_dask_cluster_gives_the_local_numbers(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    methods = ("algorithm1", "random")
    local = run_protocol("quick", seed=1, methods=methods)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        remote = run_protocol("quick", seed=1, scheduler=cluster.scheduler_address,
                              methods=methods)
    assert _numbers(remote) == _numbers(local)
    assert [r.method for r in local] == list(methods)


@pytest.mark.parametrize("methods", [(), "algorithm1", ("algorithm1", "gradient")])
def test_run_protocol_refuses_bad_methods(methods):
    with pytest.raises(ValueError, match="methods"):
        run_protocol("quick", methods=methods)


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"friction_dirs": 2}, ValueError), ({"friction_dirs": "16"}, TypeError),
    ({"map_objects": 1}, TypeError), ({"experiments": []}, ValueError),
    ({"experiments": [-1]}, ValueError),
])
def test_run_protocol_refuses_bad_friction_models(kwargs, error):
    with pytest.raises(error, match=next(iter(kwargs))):
        run_protocol("quick", **kwargs)


def test_friction_models_run_the_headline_with_every_model(tmp_path, monkeypatch):
    """The headline's methods once per friction model of the scale, the paper's runs reused,
    every run recording its model and its floor measured in that model."""
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    protocol = run_protocol("quick", seed=1, methods=HEADLINE_METHODS)
    runs = friction_models("quick", seed=1, runs=protocol)
    assert [r.friction_dirs for r in runs] == [4, 4, 16, 16]
    assert runs[:2] == protocol
    assert [r.method for r in runs[2:]] == list(HEADLINE_METHODS)
    assert runs[2].floor != runs[0].floor
    for run in runs:  # the floor per test push, and what the finger did on each in pybullet
        assert run.floor == pytest.approx(float(run.floor_pushes.mean()), rel=1e-12)
        assert len(run.floor_pushes) == len(run.test_slid) == len(run.test_lost_contact) == 2
        assert len(run.test_changed_side) == 2 and run.test_changed_side.dtype == bool


def test_friction_models_run_the_headlines_own_experiments(tmp_path, monkeypatch):
    """The headline's statistic is a mean over ``headline_experiments`` experiments per object:
    the protocol's are reused, the others run for every model."""
    from dataclasses import replace

    from physid.pushing.chapters import pushing_identify as study
    from physid.pushing.chapters import pushing_identify_claims as claims

    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    sizes = replace(study.SIZES["quick"], headline_experiments=2)
    monkeypatch.setattr(study, "SIZES", {"quick": sizes})
    protocol = run_protocol("quick", seed=1, methods=HEADLINE_METHODS)
    runs = friction_models("quick", seed=1, runs=protocol)
    assert [(r.friction_dirs, r.experiment) for r in runs] == [
        (4, 0), (4, 0), (4, 1), (4, 1), (16, 0), (16, 0), (16, 1), (16, 1)]
    assert runs[:2] == protocol
    assert runs[2].floor != runs[0].floor  # another truth and other pushes
    errors = claims.friction_model_errors(runs, sizes.objects, sizes.budget)
    assert errors[4].experiments == 2
    verdict = claims.headline_claim(errors[4], "Longer.")
    assert "over 2 experiments per object" in verdict.ours
    assert "measured on each object's first experiment. Longer." in verdict.why


def test_schedule_ablation_runs_each_direction_under_each_schedule(tmp_path, monkeypatch):
    """Algorithm 1's direction and the exact gradient, each under both schedules; the runs
    with their own schedule are the protocol's, the others differ from them."""
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    protocol = run_protocol("quick", seed=1, methods=HEADLINE_METHODS)
    runs = schedule_ablation("quick", seed=1, runs=protocol)
    assert [(r.method, r.schedule) for r in runs] == [
        ("algorithm1", ""), ("algorithm1", "autograd-rigid"),
        ("autograd-rigid", ""), ("autograd-rigid", "algorithm1")]
    assert runs[0] is protocol[0] and runs[2] is protocol[1]
    assert runs[1].loss.tolist() != runs[0].loss.tolist()
    assert runs[3].loss.tolist() != runs[2].loss.tolist()
    assert schedule_options("algorithm1") == {"alpha": 0.03, "decay": 0.9, "mass_power": 0.5}
    with pytest.raises(ValueError, match="method"):
        schedule_options("annealing")


def test_world_ablation_runs_the_test_pushes_in_every_setup(tmp_path, monkeypatch):
    """One floor per setup and friction model; the book's setup gives the protocol's floors
    (the same pybullet runs), the authors' another one."""
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    floors = world_ablation("quick", seed=1)
    assert [(f.setup, f.friction_dirs) for f in floors] == [
        ("book", 4), ("book", 16), ("authors", 4), ("authors", 16)]
    protocol = run_protocol("quick", seed=1, methods=("algorithm1",))
    np.testing.assert_allclose(floors[0].floor_pushes, protocol[0].floor_pushes, rtol=1e-12)
    np.testing.assert_array_equal(floors[0].slid, protocol[0].test_slid)
    assert not np.allclose(floors[2].floor_pushes, floors[0].floor_pushes)
    with pytest.raises(ValueError, match="^seed"):
        world_ablation("quick", seed=-1)


def test_uncertainty_maps_sample_the_pushing_target_from_algorithm1s_estimate(tmp_path,
                                                                               monkeypatch):
    """One SVGD run per object and push count, the same twice; the particles moved from the
    jittered start, and the travel is the cells' path in the training pushes."""
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    maps = uncertainty_maps("quick", seed=1)
    assert [(m.object, m.n_pushes) for m in maps] == [("crimp", 1), ("crimp", 2)]
    for m in maps:
        assert m.mean.shape == m.spread.shape == m.travel.shape == m.true_map.shape
        assert np.isfinite(m.spread).all() and (m.travel > 0).all() and m.scale > 0
        assert not np.allclose(m.spread, m.start_spread)
        assert m.laplace_spread.shape == m.spread.shape and (m.laplace_spread > 0).all()
        assert 0 <= m.negative_curvature <= 2 * len(m.travel)
    assert maps[1].travel.sum() > maps[0].travel.sum()
    # The Laplace approximation after a longer descent, with the most pushes only.
    assert maps[0].descended_spread.size == 0 and maps[0].descended_negative == -1
    assert maps[1].descended_spread.shape == maps[1].spread.shape
    assert (maps[1].descended_spread > 0).all()
    assert 0 <= maps[1].descended_negative <= 2 * len(maps[1].travel)
    assert not np.allclose(maps[1].descended_spread, maps[1].laplace_spread)
    again = uncertainty_maps("quick", seed=1)
    np.testing.assert_array_equal(again[0].spread, maps[0].spread)
    # The chapter's Laplace cell: the same target and point give the table's spread (to the
    # last bits: the eigensolver runs in a worker process there).
    target, centre = uncertainty_target("crimp", 1, "quick", seed=1)
    assert target.noise * target.n_restarts == pytest.approx(maps[0].scale, rel=1e-12)
    spread, negative = laplace_spread(target, centre, target.hessian(centre))
    np.testing.assert_allclose(spread, maps[0].laplace_spread, rtol=1e-12)  # LAPACK threads
    assert negative == maps[0].negative_curvature
    for kwargs, name in ((dict(name="hammer"), "name"), (dict(n_pushes=3), "n_pushes"),
                         (dict(seed=-1), "seed")):
        with pytest.raises(ValueError, match=f"^{name}"):
            uncertainty_target(**{"name": "crimp", "n_pushes": 1, "scale": "quick", **kwargs})


def test_uncertainty_sizes_are_checked():
    from dataclasses import replace

    from physid.pushing.chapters.pushing_identify import SIZES

    with pytest.raises(ValueError, match="^uncertainty_pushes"):
        replace(SIZES["quick"], uncertainty_pushes=(1, 3))


def test_log_slope_reads_a_power_law():
    x = np.array([10.0, 20.0, 40.0, 80.0])
    assert log_slope(x, 3 * x**1.5) == pytest.approx(1.5)
    assert log_slope(x, [1.0, np.nan, 4.0, np.nan]) == pytest.approx(1.0)
    assert np.isnan(log_slope(x, [1.0, np.nan, np.nan, np.nan]))


def test_steps_to_counts_the_steps_to_most_of_the_gain():
    assert steps_to(np.array([10.0, 6.0, 5.0, 5.0])) == 2
    assert steps_to(np.array([10.0, 1.0, 1.0])) == 1
    assert steps_to(np.array([10.0, 11.0, 12.0])) == 0


@pytest.mark.parametrize("name", list(REGION_FEATURES))
def test_feature_contrast_of_the_drawn_truth_shows_the_feature(name):
    obj = load_object(name)
    truth = (obj.masses * obj.frictions).numpy()
    flat = np.ones(len(obj))
    assert shows_feature(name, feature_contrast(name, truth / truth.sum()))
    assert feature_contrast(name, flat) == pytest.approx(1.0)
    assert not shows_feature(name, feature_contrast(name, flat))


def test_feature_contrast_refuses_a_map_of_another_object():
    with pytest.raises(ValueError, match="identified_map"):
        feature_contrast("hammer", np.ones(3))
    with pytest.raises(ValueError, match="name"):
        feature_contrast("spoon", np.ones(3))


@pytest.fixture(scope="module")
def tiny_target():
    """One 0.2 s push of a 1 × 2 box in the rigid engine, as a pushing target."""
    obj = rectangle(1, 2, 0.02, 1.0, 0.4)
    push = random_pushes(obj, 1, seed=3, duration=0.2)
    data = observe(obj, push, torch.tensor([1.0, 2.0], dtype=F64),
                   torch.tensor([0.3, 0.6], dtype=F64), world="rigid")
    return PushingTarget(data)


def test_a_part_two_estimator_runs_on_the_pushing_target(tiny_target):
    target = tiny_target
    estimator = make_estimator("SVGD", target, n_particles=4, seed=0)
    history = estimator.run(2, progress=False)
    final = history.final()
    assert final.shape == (4, 2 * target.k)
    assert np.isfinite(final).all()
    assert not np.allclose(final, history.particles[0])


def test_laplace_spread_is_the_priors_without_curvature_and_shrinks_with_it(tiny_target):
    target = tiny_target
    x = torch.tensor([0.2, 0.6, 0.3, 0.7], dtype=F64)
    flat, negative = laplace_spread(target, x, torch.zeros(4, 4, dtype=F64))
    assert negative == 0
    # No curvature: the prior's variance 1/12 in every coordinate, through the map's Jacobian.
    jacobian = torch.autograd.functional.jacobian(
        lambda z: identifiable_map(*target.physical(z[None]))[0], x)
    expected = 2 * (jacobian.square().sum(1) / 12).sqrt()
    np.testing.assert_allclose(flat, expected.numpy(), rtol=1e-12)
    # Curvature narrows it; a direction of negative curvature is counted and keeps the prior's.
    sharp, _ = laplace_spread(target, x, 1e4 * torch.eye(4, dtype=F64))
    assert (sharp < 0.05 * flat).all()
    _, negative = laplace_spread(target, x, torch.diag(torch.tensor([-5.0, 1.0, 2.0, 3.0],
                                                                    dtype=F64)))
    assert negative == 1
    with pytest.raises(ValueError, match="^hessian"):
        laplace_spread(target, x, torch.zeros(3, 3, dtype=F64))
    with pytest.raises(ValueError, match="^x"):
        laplace_spread(target, x + 1.0, torch.zeros(4, 4, dtype=F64))
    with pytest.raises(TypeError, match="^target"):
        laplace_spread(None, x, torch.zeros(4, 4, dtype=F64))
