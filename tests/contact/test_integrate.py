"""Algorithm 1's contact step: batching by padded contact counts, per-sample inverse inertias,
and a model that reproduces its own data with gradients on."""

import pytest
import torch

from physid.contact import ContactModel, make_task, simulate
from physid.contact.datasets import simulate_task
from physid.contact.integrate import _groups, apply_contacts, contact_bucket
from physid.contact.model import SolverLog

pytestmark = pytest.mark.usefixtures("float64_default")


def test_contact_buckets_are_exact_to_eight_then_four_per_octave():
    counts = torch.arange(0, 40)
    buckets = contact_bucket(counts)
    assert buckets[:9].tolist() == list(range(9))
    assert buckets[9:17].tolist() == [10, 10, 12, 12, 14, 14, 16, 16]
    assert buckets[17:33].tolist() == [20] * 4 + [24] * 4 + [28] * 4 + [32] * 4
    assert (buckets >= counts).all() and (buckets <= 1.25 * counts.clamp_min(8)).all()
    assert contact_bucket(torch.tensor([296])).item() == 320


def test_padded_groups_give_each_sample_its_own_impulses():
    task = make_task("Rope")  # 200 nodes: 10 to 30 simultaneous contacts
    rollout = simulate_task(task, 6, seed=3)
    x, v = rollout.x[:, 10], rollout.v[:, 10]
    counts = (task.system.detect(x).distance < 0).sum(1)
    assert len(set(counts.tolist())) > 1 and len(set(contact_bucket(counts).tolist())) < len(
        set(counts.tolist())
    ), "the test needs samples of different counts in one bucket"
    log = SolverLog()
    together, _ = apply_contacts(task.system, ContactModel(), x, v, task.mu, task.cor, task.dt, log)
    assert log.padded > 0
    for b in range(len(x)):
        alone, _ = apply_contacts(
            task.system,
            ContactModel(),
            x[b : b + 1],
            v[b : b + 1],
            task.mu,
            task.cor,
            task.dt,
            SolverLog(),
        )
        torch.testing.assert_close(together[b : b + 1], alone, rtol=1e-8, atol=1e-10)


def test_few_contacts_are_resolved_in_one_group_and_more_per_bucket():
    cpu = torch.device("cpu")
    groups = [(None if rows is None else rows.tolist(), C, size)
              for rows, C, size in _groups([0, 1, 3, 0, 5, 12, 2, 11], 4, cpu)]
    assert groups == [([1, 2, 6], 3, 3), ([4], 5, 5), ([5, 7], 12, 12)]
    assert [(rows, C) for rows, C, _ in _groups([3, 2, 1], 4, cpu)] == [(None, 3)]
    assert [(rows.tolist(), C) for rows, C, _ in _groups([0, 2, 1], 4, cpu)] == [([1, 2], 2)]
    assert _groups([0, 0], 4, cpu) == []
    assert [C for _, C, _ in _groups([0, 2, 1], 0, cpu)] == [1, 2]


def test_one_group_gives_each_sample_its_own_impulses():
    task = make_task("BP5")  # up to 4 contacts: one group, padded, with the contact-free samples
    rollout = simulate_task(task, 40, seed=3)
    for t in range(rollout.x.shape[1]):
        counts = (task.system.detect(rollout.x[:, t]).distance < 0).sum(1)
        if len(set(counts.tolist()) - {0}) > 1 and (counts == 0).any():
            break
    else:
        raise AssertionError("the test needs a step with samples of different counts")
    x, v = rollout.x[:, t], rollout.v[:, t]
    model = ContactModel()
    assert model.group_limit(2, x.device) >= int(counts.max())
    log = SolverLog()
    together, _ = apply_contacts(task.system, model, x, v, task.mu, task.cor, task.dt, log)
    assert log.padded > 0 and sum(log.contact_counts.values()) == int((counts > 0).sum())
    assert log.detected == {c: int((counts == c).sum()) for c in set(counts.tolist()) - {0}}
    for b in range(len(x)):
        alone, _ = apply_contacts(task.system, model, x[b : b + 1], v[b : b + 1], task.mu,
                                  task.cor, task.dt, SolverLog())
        torch.testing.assert_close(together[b : b + 1], alone, rtol=1e-10, atol=1e-12)
        if counts[b] == 0:
            assert torch.equal(together[b], v[b])


def test_per_sample_inverse_inertia_matches_the_shared_one():
    task = make_task("BD5")
    rollout = simulate_task(task, 4, seed=0)
    minv = task.system.inv_mass.expand(4, -1, -1).clone()
    shared = simulate(
        task.system,
        rollout.x[:, 0],
        rollout.v[:, 0],
        40,
        task.dt,
        ContactModel(),
        task.mu,
        task.cor,
    )
    per_sample = simulate(
        task.system,
        rollout.x[:, 0],
        rollout.v[:, 0],
        40,
        task.dt,
        ContactModel(),
        task.mu,
        task.cor,
        inv_mass=minv,
    )
    assert shared.contact.any()
    torch.testing.assert_close(per_sample.x, shared.x, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="inv_mass"):
        simulate(
            task.system,
            rollout.x[:, 0],
            rollout.v[:, 0],
            2,
            task.dt,
            ContactModel(),
            task.mu,
            task.cor,
            inv_mass=minv[:3],
        )


@pytest.mark.parametrize("name", ["BP5", "Gyro"])
def test_cm_reproduces_its_data_with_gradients_on(name):
    # Non-unique compression impulses (a ball in a corner, the pivoted gyroscope) once gave a
    # different minimiser on the gradient path than on the path that made the data.
    task = make_task(name)
    data = simulate_task(task, 24, seed=0)
    mu = task.mu.clone().requires_grad_(True)
    cor = task.cor.clone().requires_grad_(True)
    again = simulate(
        task.system, data.x[:, 0], data.v[:, 0], task.n_steps, task.dt, ContactModel(), mu, cor
    )
    assert data.contact.any() and again.log.fallbacks == 0
    assert (again.x.detach() - data.x).abs().max() < 1e-9
    (again.v[:, -1].sum()).backward()
    assert torch.isfinite(mu.grad).all() and torch.isfinite(cor.grad).all()


def test_learnable_cmr_regularisation_gets_a_gradient():
    task = make_task("CP3")
    data = simulate_task(task, 8, seed=1)
    reg = torch.tensor(0.05, requires_grad=True)
    out = simulate(
        task.system,
        data.x[:, 0],
        data.v[:, 0],
        40,
        task.dt,
        ContactModel(variant="CMr", reg=reg),
        task.mu,
        task.cor,
    )
    assert out.contact.any()
    out.v[:, -1].abs().sum().backward()
    assert torch.isfinite(reg.grad) and reg.grad != 0
    with pytest.raises(ValueError, match="reg"):
        ContactModel(variant="CMr", reg=torch.tensor(-0.1, requires_grad=True))
