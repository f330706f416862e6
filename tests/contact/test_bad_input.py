"""Bad input to Part III's task factory and contact model, and models that keep the global
random state: building a model draws from its own seeded generator only."""

from __future__ import annotations

import pytest
import torch

from physid.contact import models
from physid.contact.baselines import mlp
from physid.contact.learned import Potential
from physid.contact.model import ContactModel, penetration_target
from physid.contact.tasks import make_task, rope_task

F64 = torch.float64


@pytest.mark.parametrize(
    "device, error, message",
    [
        (3, TypeError, r"^device must be a device name or a torch.device, got 3"),
        ("tpu", ValueError, r"^device must name a torch device, got 'tpu'"),
        ("meta", ValueError, r"^device must be a CPU or CUDA device, got 'meta'"),
    ],
)
@pytest.mark.parametrize(
    "factory", [lambda d: make_task("CP3", device=d), lambda d: rope_task(4, d)]
)
def test_a_bad_device_is_named(factory, device, error, message):
    with pytest.raises(error, match=message):
        factory(device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_gpu_on_a_machine_without_one_is_named():
    with pytest.raises(ValueError, match=r"^device is 'cuda', but torch sees no GPU"):
        make_task("Rope4", device="cuda")


@pytest.mark.parametrize("device", [None, "cpu", torch.device("cpu"), "auto"])
def test_good_devices_still_work(device):
    task = make_task("CP3", device=device)
    expected = "cuda" if device == "auto" and torch.cuda.is_available() else "cpu"
    assert task.system.device.type == expected and task.mu.device.type == expected


@pytest.mark.parametrize("compensation", [5.0, 1.0 + 1e-9, torch.tensor(2.0)])
def test_a_compensation_above_one_is_refused(compensation):
    from physid.contact.lcp import LCPModel

    with pytest.raises(ValueError, match=r"^compensation must be <= 1, got"):
        ContactModel(compensation=compensation)
    with pytest.raises(ValueError, match=r"^compensation must be <= 1, got"):
        LCPModel(compensation=compensation)


def test_a_fraction_above_one_is_refused():
    with pytest.raises(ValueError, match=r"^fraction must be <= 1, got 1.5"):
        penetration_target(torch.zeros(1, 1, dtype=F64), 2, 0.01, fraction=1.5)


@pytest.mark.parametrize("compensation", [0.0, 0.125, 1.0])
def test_compensations_in_the_unit_interval_still_work(compensation):
    assert ContactModel(compensation=compensation).compensation == compensation


@pytest.fixture(scope="module")
def tasks():
    return {name: make_task(name) for name in ("CP3", "BD5", "Gyro", "Rope4")}


@pytest.mark.parametrize("task_name", ["CP3", "BD5", "Gyro", "Rope4"])
@pytest.mark.parametrize("model_name", models.MODELS.names())
def test_building_a_model_leaves_the_global_random_state(tasks, task_name, model_name):
    before = torch.random.get_rng_state()
    models.build(model_name, tasks[task_name], seed=5)
    assert torch.equal(torch.random.get_rng_state(), before)


def test_building_layers_leaves_the_global_random_state():
    before = torch.random.get_rng_state()
    Potential(6, hidden=8, layers=2, generator=torch.Generator().manual_seed(1))
    mlp([4, 8, 2], torch.Generator().manual_seed(1))
    assert torch.equal(torch.random.get_rng_state(), before)
