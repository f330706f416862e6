"""The paper's baselines MLP-CD-CLNN, IN-CP-CLNN and IN-CP-SP: shapes, determinism, the
detector gate, the IN's position update, gradients and a few training steps."""

import numpy as np
import pytest
import torch

from physid.contact.baselines import true_masses
from physid.contact.datasets import generate
from physid.contact.models import MODELS, family
from physid.contact.rope import Rope
from physid.contact.tasks import Task, make_task

NAMES = family("baseline")
TASKS = ("BP5", "CP3", "Gyro", "Rope")


def short_rope() -> Task:
    system = Rope(n_nodes=10)
    P = system.n_candidates
    zeros = torch.zeros(P, dtype=torch.float64)
    return Task("Rope", "10-node rope", system, zeros, zeros.clone(), 0.005, 20)


def task_named(name: str) -> Task:
    return short_rope() if name == "Rope" else make_task(name)


@pytest.fixture(scope="module")
def bp5_data():
    return generate("BP5", 16, 4, 4, seed=0)


def states(task: Task, n: int = 3, seed: int = 0):
    return task.system.sample_state(n, np.random.default_rng(seed))


def one_step_pairs(data, n: int = 16):
    """One pair per training chunk: the step into a contact where the chunk has one."""
    x, v = data.train.x[:n], data.train.v[:n]
    system = make_task("BP5").system
    rows = torch.arange(len(x))
    t = torch.zeros(len(x), dtype=torch.long)
    for step in range(x.shape[1] - 1, 0, -1):
        hit = (system.detect(x[:, step]).distance < 0).any(1)
        t = torch.where(hit, step - 1, t)
    return x[rows, t], v[rows, t], x[rows, t + 1], v[rows, t + 1]


def l1(model, x0, v0, x1, v1) -> torch.Tensor:
    xs, vs = model.rollout(x0, v0, 1)
    return (xs[:, 1] - x1).abs().mean() + (vs[:, 1] - v1).abs().mean()


@pytest.mark.parametrize("task_name", TASKS)
@pytest.mark.parametrize("name", NAMES)
def test_shapes_and_determinism(name, task_name):
    task = task_named(task_name)
    x0, v0 = states(task)
    model = MODELS[name].build(task, 0)
    assert model.one_step is True and model.task is task
    assert all(p.dtype == torch.float64 for p in model.parameters())
    xs, vs = model.rollout(x0, v0, 3)
    N = task.system.n_coords
    assert xs.shape == vs.shape == (3, 4, N)
    assert torch.equal(xs[:, 0], x0) and torch.equal(vs[:, 0], v0)
    assert torch.isfinite(xs).all() and torch.isfinite(vs).all()
    again = MODELS[name].build(task, 0).rollout(x0, v0, 3)
    assert torch.equal(again[0], xs) and torch.equal(again[1], vs)
    other = MODELS[name].build(task, 1).rollout(x0, v0, 3)
    assert not torch.equal(other[1], vs)
    learned = model.learned_parameters()
    if name == "IN-CP-SP":
        assert learned == {}
    else:
        assert learned["masses"].shape == learned["mass_ratios"].shape
        assert (learned["masses"] > 0).all() and learned["mass_ratios"][0] == pytest.approx(1)


def test_validation():
    task = make_task("BP5")
    x0, v0 = states(task)
    model = MODELS["IN-CP-SP"].build(task, 0)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="n_steps"):
            model.rollout(x0, v0, bad)
    with pytest.raises(TypeError, match="n_steps"):
        model.rollout(x0, v0, 2.0)
    nan = x0.clone()
    nan[0, 0] = float("nan")
    with pytest.raises(ValueError, match="x0"):
        model.rollout(nan, v0, 1)
    with pytest.raises(ValueError, match="x0"):
        model.rollout(x0[:, :4], v0, 1)
    with pytest.raises(ValueError, match="v0"):
        model.rollout(x0, v0[:2], 1)
    with pytest.raises(TypeError, match="v0"):
        model.rollout(x0, v0.float(), 1)
    for name in NAMES:
        with pytest.raises(ValueError, match="seed"):
            MODELS[name].build(task, -1)
        with pytest.raises(TypeError, match="task"):
            MODELS[name].build("BP5", 0)


def test_in_objects_relations_and_features():
    bp5 = MODELS["IN-CP-SP"].build(make_task("BP5"), 0).interaction
    assert bp5.n_bodies == 5 and len(bp5.senders) == 20
    torch.testing.assert_close(
        bp5.attributes[:, 1], torch.tensor([0.05, 0.1, 0.3, 0.4, 0.5], dtype=torch.float64)
    )
    rope = MODELS["IN-CP-CLNN"].build(short_rope(), 0).interaction
    pairs = set(zip(rope.senders.tolist(), rope.receivers.tolist(), strict=True))
    assert pairs == {(i, i + 1) for i in range(9)} | {(i + 1, i) for i in range(9)}
    gyro = MODELS["IN-CP-CLNN"].build(make_task("Gyro"), 0).interaction
    assert gyro.n_bodies == 1 and len(gyro.senders) == 0  # one rigid body of 4 points
    cp3 = make_task("CP3")
    torch.testing.assert_close(true_masses(cp3.system), cp3.system.masses)
    gravity = MODELS["IN-CP-SP"].build(cp3, 0).interaction.global_features
    assert gravity.tolist() == [cp3.system.gravity] and cp3.system.gravity > 9
    assert MODELS["IN-CP-SP"].build(make_task("BP5"), 0).interaction.global_features.tolist() == [0]


def test_mlp_cd_jumps_only_where_the_detector_fires():
    task = make_task("BP5")
    model = MODELS["MLP-CD-CLNN"].build(task, 0)
    free = torch.tensor([0.2, 0.2, 0.5, 0.2, 0.8, 0.3, 0.3, 0.7, 0.7, 0.7], dtype=torch.float64)
    touching = free.clone()
    touching[0] = 0.03  # ball 0 (r = 0.05) overlaps the left wall
    x = torch.stack([free, touching])
    v = torch.full_like(x, 0.1)
    xs, vs = model.rollout(x, v, 1)
    x1, v1 = model.smooth(x, v)
    assert model.in_contact(x1).tolist() == [False, True]
    assert torch.equal(xs[:, 1], x1)
    assert torch.equal(vs[0, 1], v1[0])  # no contact: the CLNN alone
    jump = model.jump(torch.cat([x1[1:], v1[1:]], -1))[0]
    assert jump.abs().max() > 1e-6
    torch.testing.assert_close(vs[1, 1], v1[1] + jump, rtol=0, atol=1e-14)


def test_in_cp_sp_moves_positions_with_the_current_velocity():
    task = make_task("CP3")
    x0, v0 = states(task, 4)
    xs, vs = MODELS["IN-CP-SP"].build(task, 0).rollout(x0, v0, 5)
    assert torch.equal(xs[:, 1:], xs[:, :-1] + vs[:, :-1] * task.dt)
    assert not torch.equal(vs[:, 1:], vs[:, :-1])


@pytest.mark.parametrize("name", NAMES)
def test_gradients_reach_every_parameter_group(name, bp5_data):
    model = MODELS[name].build(make_task("BP5"), 0)
    x0, v0, x1, v1 = one_step_pairs(bp5_data)
    if name == "MLP-CD-CLNN":
        assert model.in_contact(model.smooth(x0, v0)[0]).any()
    l1(model, x0, v0, x1, v1).backward()
    groups = dict(model.named_children())
    if "interaction" in groups:
        network = groups.pop("interaction")
        groups.update(relational=network.relational, object=network.object)
    assert len(groups) == {"IN-CP-SP": 2, "MLP-CD-CLNN": 3, "IN-CP-CLNN": 4}[name]
    for group, module in groups.items():
        grads = [p.grad for p in module.parameters() if p.numel()]  # not empty moments
        if group != "potential":  # the force -∇V does not depend on V's output bias
            assert all(g is not None for g in grads), group
        assert any(g is not None and bool(g.abs().sum() > 0) for g in grads), group


@pytest.mark.parametrize("name", NAMES)
def test_a_few_adamw_steps_lower_the_l1_loss(name, bp5_data):
    torch.manual_seed(0)
    model = MODELS[name].build(make_task("BP5"), 0)
    pairs = one_step_pairs(bp5_data)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    losses = []
    for _ in range(6):
        optimizer.zero_grad()
        loss = l1(model, *pairs)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    final = l1(model, *pairs).item()
    assert final < 0.9 * losses[0], losses + [final]
