"""Training, evaluation and jobs of the learned models (physid.contact.training)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from physid.contact import datasets, make_task, models
from physid.contact import training as tr
from physid.contact.learned import ContactCLNN
from physid.core.sweeps import run_jobs

TINY = {"n_train": 8, "n_val": 4, "n_test": 2, "epochs": 2, "batch_size": 4}


@pytest.fixture(scope="module")
def bp5():
    """A tiny BP5 data set: 16 training chunks, 8 validation chunks, 4 test trajectories."""
    return make_task("BP5"), datasets.generate("BP5", 16, 8, 4, seed=5)


def test_registry_names_every_model():
    expected = {"CM-CD-CLNN", "CM-CD-CHNN", "CMr-CD-CLNN", "CMr-CD-CHNN"}
    assert expected <= set(models.MODELS)
    assert {"MLP-CD-CLNN", "IN-CP-CLNN", "IN-CP-SP"} <= set(models.MODELS)
    task = make_task("CP3")
    model = models.build("CMr-CD-CHNN", task, 3)
    assert model.variant == "CMr" and model.seed == 3 and not model.one_step
    with pytest.raises(ValueError, match="name"):
        models.build("CLNN", task, 0)
    with pytest.raises(ValueError, match="seed"):
        models.build("CM-CD-CLNN", task, -2)


def test_train_config_is_validated():
    config = tr.TrainConfig(epochs=3)
    assert (config.batch_size, config.lr, config.weight_decay) == (200, 1e-3, 1e-4)
    with pytest.raises(ValueError, match="epochs"):
        tr.TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="lr"):
        tr.TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="weight_decay"):
        tr.TrainConfig(weight_decay=math.nan)
    with pytest.raises(TypeError, match="batch_size"):
        tr.TrainConfig(batch_size=2.5)


def test_training_reduces_the_loss_and_keeps_the_best_state(bp5):
    task, data = bp5
    model = models.build("CM-CD-CLNN", task, 0)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    before = tr._mean_loss(model, data.train.x, data.train.v, 200)
    result = tr.train(model, data, tr.TrainConfig(epochs=3, batch_size=8, lr=1e-3, seed=1))
    assert result.val_loss.shape == result.train_loss.shape == (3,)
    assert result.train_loss[-1] < result.train_loss[0]
    assert tr._mean_loss(model, data.train.x, data.train.v, 200) < before
    assert result.best_epoch == int(np.argmin(result.val_loss)) + 1
    assert result.skipped_steps == 0 and result.steps == 3 * 2
    assert result.seconds_per_iteration > 0
    assert result.solver["problems"] > 0 and result.solver["fallbacks"] == 0
    for key, value in model.state_dict().items():  # the best state is loaded
        assert torch.equal(value, result.best_state[key])
    assert not torch.equal(start["masses.log_mass"], model.state_dict()["masses.log_mass"])
    assert set(result.learned) >= {"mu", "cor", "mass_ratios"}
    errors = tr.evaluate(model, data)
    assert errors["steps"] == 100 and errors["diverged"] == 0
    assert math.isfinite(errors["traj_rel_error"]) and errors["traj_rel_error"] > 0
    assert math.isfinite(errors["traj_rel_error_ci"])
    assert errors["traj_rel_errors"].shape == (4,)
    assert errors["energy_pred"].shape == errors["energy_true"].shape == (4, 101)
    assert errors["rel_error_t"][0] == 0.0


def test_a_step_with_a_non_finite_gradient_is_skipped_and_counted(bp5):
    task, data = bp5
    model = models.build("CM-CD-CLNN", task, 0)
    model.masses.log_mass.register_hook(lambda g: g * math.nan)
    start = {k: v.clone() for k, v in model.state_dict().items()}
    result = tr.train(model, data, tr.TrainConfig(epochs=1, batch_size=8))
    assert result.skipped_steps == result.steps == 2
    assert np.isnan(result.train_loss).all()
    for key, value in model.state_dict().items():
        assert torch.equal(value, start[key]), key


def test_evaluation_counts_a_diverging_rollout(bp5):
    task, data = bp5
    model = ContactCLNN(task, "CM", 0)

    class Broken(nn.Module):  # the force of trajectory 0 is NaN
        def force(self, x):
            f = torch.zeros_like(x)
            f[0] = torch.nan
            return f

    model.potential = Broken()
    errors = tr.evaluate(model, data)
    assert errors["diverged"] == 1
    assert errors["traj_rel_errors"][0] == math.inf
    assert np.isfinite(errors["traj_rel_errors"][1:]).all()
    assert errors["traj_rel_error"] == math.inf


def test_evaluation_of_the_truth_is_exact():
    task = make_task("CP3")
    data = datasets.generate(task, 0, 0, 3, seed=4)
    from tests.contact.test_learned import at_truth

    model = at_truth(ContactCLNN(task, "CM", 0), task)
    errors = tr.evaluate(model, data)
    assert errors["traj_rel_error"] < 1e-12 and errors["rel_error_50"] < 1e-12
    np.testing.assert_allclose(errors["energy_pred"], errors["energy_true"], atol=1e-12)


def test_bad_input_raises_naming_the_argument(bp5):
    task, data = bp5
    model = models.build("CM-CD-CHNN", task, 0)
    with pytest.raises(TypeError, match="config"):
        tr.train(model, data, {"epochs": 1})
    with pytest.raises(TypeError, match="data"):
        tr.train(model, data.train, tr.TrainConfig(epochs=1))
    with pytest.raises(TypeError, match="model"):
        tr.evaluate(object(), data)
    other = models.build("CM-CD-CLNN", make_task("BP5-e"), 0)
    with pytest.raises(ValueError, match="task"):
        tr.evaluate(other, data)
    with pytest.raises(ValueError, match="unknown"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", epoch=3)
    with pytest.raises(ValueError, match="model"):
        tr.make_job(task="BP5", model="LNN")
    with pytest.raises(ValueError, match="task"):
        tr.make_job(task="BP6", model="CM-CD-CLNN")
    with pytest.raises(ValueError, match="data_model"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", data_model="MuJoCo")
    with pytest.raises(ValueError, match="n_val"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", n_val=0)
    with pytest.raises(ValueError, match="lr"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", lr=0.0)
    with pytest.raises(ValueError, match="learn_reg"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", learn_reg=True)
    assert tr.make_job(task="BP5", model="CMr-CD-CHNN", learn_reg=True)["learn_reg"]
    with pytest.raises(ValueError, match="device"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", device="gpu")
    assert tr.make_job(task="BP5", model="CM-CD-CLNN")["device"] == "cpu"
    with pytest.raises(ValueError, match="^network_dtype"):
        tr.make_job(task="BP5", model="CM-CD-CLNN", network_dtype="half")
    with pytest.raises(ValueError, match="^network_dtype 'float32' is for the contact"):
        tr.make_job(task="BP5", model="MLP-CD-CLNN", network_dtype="float32")


def test_a_float32_potential_learns_the_same_parameters():
    """The contact networks' potential in float32, the rest in float64: the learned masses and
    coefficients agree with the float64 network's within 1e-6 (relative) after 6 epochs on
    BP5 (1e-9 measured), and the result records the precision."""
    job = {"task": "BP5", "model": "CM-CD-CLNN", **TINY, "epochs": 6, "n_train": 16}
    wide = tr.fit(job)
    narrow = tr.fit({**job, "network_dtype": "float32"})
    assert narrow["job"]["network_dtype"] == "float32"
    assert narrow["state"]["potential.net.0.weight"].dtype == np.float32
    for key in ("mu", "cor", "masses"):
        np.testing.assert_allclose(narrow["learned"][key], wide["learned"][key], rtol=1e-6,
                                   atol=1e-9)
    assert not np.array_equal(narrow["learned"]["masses"], wide["learned"]["masses"])
    model = tr.restore(narrow)
    assert model.potential.net[0].weight.dtype == torch.float32


def test_data_and_models_follow_the_task_device(bp5):
    task, data = bp5
    moved = data.to("cpu")
    assert torch.equal(moved.train.x, data.train.x) and torch.equal(moved.test_v, data.test_v)
    assert len(moved.val) == len(data.val) and moved.task == data.task
    for name in models.MODELS:
        devices = {p.device for p in models.build(name, task, 0).parameters()}
        assert devices == {task.system.device}, name


def _same(a, b, path="result"):
    """Assert two plain results are equal (NaN equal to NaN), recursively."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for key in a:
            _same(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), path
    else:
        assert a == b, path


def _no_tensors(value, path="result"):
    assert not isinstance(value, torch.Tensor), path
    if isinstance(value, dict):
        for key, item in value.items():
            _no_tensors(item, f"{path}.{key}")


def test_a_job_is_deterministic_plain_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PHYSID_CACHE", str(tmp_path))
    job = {"task": "CP3", "model": "CM-CD-CLNN", **TINY}
    first = tr.fit(job)
    _no_tensors(first)
    assert first["job"] == tr.make_job(**job)
    assert first["evaluation"]["traj_rel_errors"].shape == (2,)
    second = run_jobs(tr.fit_cached, [{"job": job}])[0]
    monkeypatch.setattr(tr, "fit", lambda job: pytest.fail("the cache was not used"))
    third = tr.fit_cached(job)
    for result in (first, second, third):
        result.pop("seconds_per_iteration")
    _same(first, second)
    _same(second, third)
    # Where training started: the seeded model's parameters, which training moved.
    start = tr.initial_parameters(job)
    assert set(start) == set(first["learned"])
    assert not np.allclose(start["cor"], first["learned"]["cor"])
    _same(start, tr.initial_parameters(first["job"]))
    with pytest.raises(TypeError, match="^job"):
        tr.initial_parameters(None)


def test_a_job_can_learn_the_regularisation():
    job = {"task": "CP3", "model": "CMr-CD-CLNN", "learn_reg": True, **TINY, "n_test": 0}
    result = tr.fit(job)
    assert result["evaluation"] is None
    assert "contact.raw_reg" in result["state"]
    reg = result["learned"]["reg"]
    assert math.isfinite(reg) and reg != pytest.approx(0.01, abs=1e-9)


def test_learning_rate_is_constant_or_a_cosine_from_lr_to_lr_final():
    assert tr.learning_rate(1e-2, None, 5, 10) == 1e-2
    assert tr.learning_rate(1e-2, 1e-3, 0, 10) == pytest.approx(1e-2)
    assert tr.learning_rate(1e-2, 1e-3, 9, 10) == pytest.approx(1e-3)
    assert tr.learning_rate(1e-2, 1e-3, 5, 11) == pytest.approx(5.5e-3)
    rates = [tr.learning_rate(1e-2, 1e-3, k, 50) for k in range(50)]
    assert all(a > b for a, b in zip(rates, rates[1:], strict=False))
    with pytest.raises(ValueError, match="^step"):
        tr.learning_rate(1e-2, 1e-3, 10, 10)
    with pytest.raises(ValueError, match="^lr_final"):
        tr.TrainConfig(lr=1e-3, lr_final=1e-2)
    with pytest.raises(ValueError, match="^checkpoint"):
        tr.TrainConfig(checkpoint="smoothed")


def test_train_follows_the_schedule_and_the_checkpoint_rule(monkeypatch, bp5):
    task, data = bp5
    seen = []
    original = tr.learning_rate

    def spy(*args):
        seen.append(original(*args))
        return seen[-1]

    monkeypatch.setattr(tr, "learning_rate", spy)
    model = models.build("CM-CD-CLNN", task, 0)
    config = tr.TrainConfig(epochs=3, batch_size=8, lr=1e-2, lr_final=1e-3, checkpoint="last")
    result = tr.train(model, data, config)
    assert len(seen) == result.steps == 6
    assert seen[0] == pytest.approx(1e-2) and seen[-1] == pytest.approx(1e-3)
    assert result.best_epoch == 3
    assert result.trace["cor"].shape[0] == 3
    np.testing.assert_allclose(result.trace["cor"][-1], result.learned["cor"])
    np.testing.assert_allclose(result.trace["mass_ratios"][-1], result.learned["mass_ratios"])


def test_plateau_rule_counts_epochs_since_the_last_real_fall():
    # 1 % falls count; 0.5 % falls and non-finite losses do not.
    assert not tr.plateaued([1.0, 0.98, 0.96], 2)
    assert tr.plateaued([1.0, 0.98, 0.975, 0.971], 2)  # 0.975 and 0.971 are within 1 % of 0.98
    assert not tr.plateaued([1.0, 0.98, 0.975, 0.96], 2)  # 0.96 is 2 % below 0.98
    assert tr.plateaued([1.0, math.nan, math.inf], 2)
    assert tr.plateaued([math.nan, math.nan], 2) and not tr.plateaued([math.nan, 1.0], 2)
    assert not tr.plateaued([1.0, 0.999], 1, min_improvement=0.0)
    assert tr.plateaued([1.0, 0.999], 1, min_improvement=0.01)
    with pytest.raises(ValueError, match="patience"):
        tr.plateaued([1.0], 0)
    with pytest.raises(TypeError, match="patience"):
        tr.TrainConfig(patience=1.5)
    for bad, name in (({"patience": 0}, "patience"),
                      ({"min_improvement": 1.0}, "min_improvement"),
                      ({"min_improvement": -0.1}, "min_improvement")):
        with pytest.raises(ValueError, match=name):
            tr.TrainConfig(**bad)
    assert tr.TrainConfig(patience=np.int64(3)).patience == 3


def test_train_stops_at_a_plateau_and_keeps_its_schedule(monkeypatch, bp5):
    """With a patience of 1 and a fall of 99 % asked for, the second epoch cannot make
    progress: training stops after it, the rate where the 5-epoch schedule had it, the losses
    and the trace two epochs long, the last state kept."""
    task, data = bp5
    seen = []
    original = tr.learning_rate

    def spy(*args):
        seen.append(args)
        return original(*args)

    monkeypatch.setattr(tr, "learning_rate", spy)
    model = models.build("CM-CD-CLNN", task, 0)
    config = tr.TrainConfig(epochs=5, batch_size=8, lr=1e-2, lr_final=1e-3, checkpoint="last",
                            patience=1, min_improvement=0.99)
    result = tr.train(model, data, config)
    assert result.steps == 4 and len(seen) == 4 and {a[-1] for a in seen} == {10}
    assert len(result.val_loss) == len(result.train_loss) == result.trace["cor"].shape[0] == 2
    assert result.best_epoch == 2
    np.testing.assert_allclose(result.trace["cor"][-1], result.learned["cor"])
    # Without the rule, the same start trains every epoch.
    full = tr.train(models.build("CM-CD-CLNN", task, 0), data,
                    tr.TrainConfig(epochs=3, batch_size=8, lr=1e-2, lr_final=1e-3))
    assert full.steps == 6 and len(full.val_loss) == 3


def test_planned_steps_count_the_schedule_not_the_stop():
    job = tr.make_job(task="BP5", model="IN-CP-SP", n_train=10, batch_size=4, epochs=7,
                      patience=2)
    assert tr.planned_steps(job) == 21 and job["patience"] == 2
    assert tr.make_job(task="BP5", model="IN-CP-SP")["patience"] is None
