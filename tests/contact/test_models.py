"""The model registry: every model is a LearnedModel, built the same from the same seed."""

from __future__ import annotations

import pytest
import torch

from physid.contact.model import SolverLog
from physid.contact.models import FAMILIES, MODELS, LearnedModel, ModelSpec, build, family
from physid.contact.tasks import make_task

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name", list(MODELS))
def test_every_registered_model_satisfies_the_contract(name):
    task = make_task("CP3")
    model = build(name, task, 0)
    assert isinstance(model, torch.nn.Module) and isinstance(model, LearnedModel)
    assert model.task is task and isinstance(model.log, SolverLog)
    assert model.one_step == (MODELS[name].family == "baseline")
    assert isinstance(model.learned_parameters(), dict)
    again = build(name, task, 0).state_dict()
    for key, value in model.state_dict().items():
        assert torch.equal(value, again[key]), key


def test_families_split_the_registry_and_colours_are_distinct():
    assert set(family("contact")) | set(family("baseline")) == set(MODELS)
    assert family("contact") == ("CM-CD-CLNN", "CM-CD-CHNN", "CMr-CD-CLNN", "CMr-CD-CHNN")
    assert len(set(MODELS.view("colour").values())) == len(MODELS)
    assert {m for m, s in MODELS.items() if s.learns_reg} == {"CMr-CD-CLNN", "CMr-CD-CHNN"}
    assert FAMILIES == ("contact", "baseline")


def test_bad_names_and_families_are_refused():
    with pytest.raises(ValueError, match=r"^name must be one of"):
        build("CM-CD-XYZ", "CP3", 0)
    with pytest.raises(ValueError, match=r"^family"):
        family("networks")
    with pytest.raises(ValueError, match=r"^family"):
        ModelSpec("X", build, "other", "#000000")
    with pytest.raises(TypeError, match=r"^task"):
        build("CM-CD-CLNN", 3, 0)


def test_systems_declare_what_the_baselines_read():
    """Gravity, radii and interacting pairs are declared by every system, with defaults."""
    bp5, cp3, gyro = (make_task(n).system for n in ("BP5", "CP3", "Gyro"))
    assert bp5.gravity == 0.0 and bp5.radii.shape == (5,) and bp5.n_bodies == 5
    assert cp3.gravity > 0 and cp3.radii.shape == (3,)
    assert gyro.radii is None and gyro.n_bodies == 1 and gyro.interacting_pairs() == []
    assert len(bp5.interacting_pairs()) == 20
    rope = make_task("Rope4").system
    assert rope.interacting_pairs() == [(0, 1), (1, 2), (2, 3), (1, 0), (2, 1), (3, 2)]


def test_every_task_system_declares_a_registered_drawing():
    from physid.contact.drawing import DRAWINGS, drawing_of
    from physid.contact.tasks import TASK_NAMES

    kinds = {name: drawing_of(make_task(name if name != "Rope" else "Rope5").system).name
             for name in TASK_NAMES}
    assert set(kinds.values()) == set(DRAWINGS)
    assert kinds["BP5"] == kinds["BD5"] == "bodies" and kinds["Gyro"] == "gyroscope"
