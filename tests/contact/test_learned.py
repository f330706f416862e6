"""The learned models (physid.contact.learned): inertia, potential, CLNN/CHNN with contact."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from physid.contact import ContactModel, datasets, make_task, simulate
from physid.contact.learned import (
    ContactCHNN,
    ContactCLNN,
    ContactParameters,
    MassModel,
    Potential,
    hamiltonian_field,
    restitution_reach,
    smooth_step,
)


class TruePotential(nn.Module):
    """The system's own potential and force, in place of the learned MLP."""

    def __init__(self, system) -> None:
        super().__init__()
        self.system = system

    def forward(self, x):
        return self.system.potential(x)

    def force(self, x):
        return self.system.force(x)


def true_masses(task):
    """The truth as (masses, moments) for MassModel.set_values."""
    system = task.system
    if task.name.startswith("Gyro"):
        return [system.mass], [[0.24, 0.24, 0.04]]
    if task.name == "BD5":
        radii = np.asarray(system.radii_np)
        return system.masses, np.repeat((radii**2 / 4)[:, None], 2, 1)
    if task.name.startswith("CP"):
        return system.masses_np, None
    return system.masses, None


def at_truth(model, task):
    """``model`` with the true potential, inertia and contact coefficients."""
    model.potential = TruePotential(task.system)
    model.masses.set_values(*true_masses(task))
    model.contact.set_values(task.mu, task.cor)
    return model


@pytest.mark.parametrize("name", ["BP5", "BD5", "Gyro"])
def test_mass_model_at_the_truth_is_the_true_inverse_inertia(name):
    task = make_task(name)
    model = MassModel(task.system, torch.Generator().manual_seed(0))
    truth = task.system.inv_mass
    assert not torch.allclose(model.inv_mass(), truth)  # the random start is not the truth
    model.set_values(*true_masses(task))
    error = (model.inv_mass().detach() - truth).abs().max()
    assert float(error) <= 1e-13 * float(truth.abs().max())
    n_bodies = {"BP5": 5, "BD5": 5, "Gyro": 1}[name]
    assert model.masses().shape == (n_bodies,)
    assert model.moments().shape == (n_bodies, task.system.points_per_body - 1)


def test_mass_model_starts_as_the_authors():
    task = make_task("BD5")
    a = MassModel(task.system, torch.Generator().manual_seed(3))
    b = MassModel(task.system, torch.Generator().manual_seed(3))
    assert torch.equal(a.log_mass, b.log_mass) and torch.equal(a.log_moment, b.log_moment)
    assert float(a.log_mass.abs().max()) < 0.5  # 0.1 · N(0, 1)
    with pytest.raises(ValueError, match="masses"):
        a.set_values([1.0, 2.0, -1.0, 1.0, 1.0], np.ones((5, 2)))
    with pytest.raises(ValueError, match="moments"):
        a.set_values(np.ones(5), None)


def test_potential_force_is_minus_its_gradient_and_differentiable():
    potential = Potential(4, hidden=16, layers=2, generator=torch.Generator().manual_seed(0))
    assert potential.net[0].weight.dtype == torch.float64
    w = potential.net[2].weight  # orthogonal initialisation
    assert torch.allclose(w @ w.T, torch.eye(16, dtype=torch.float64), atol=1e-12)
    x = torch.randn(3, 4, dtype=torch.float64)
    force = potential.force(x)
    eps = 1e-6
    for j in range(4):
        dx = torch.zeros(4, dtype=torch.float64)
        dx[j] = eps
        numeric = -(potential(x + dx) - potential(x - dx)) / (2 * eps)
        assert torch.allclose(force[:, j], numeric, atol=1e-7)
    force.sum().backward()  # the graph of the derivative is kept
    assert potential.net[0].weight.grad is not None
    with torch.no_grad():
        assert not potential.force(x).requires_grad


def test_a_float32_potential_starts_from_the_same_weights_and_answers_in_float64():
    generator = torch.Generator().manual_seed(0)
    wide = Potential(4, hidden=16, layers=2, generator=generator)
    narrow = Potential(4, hidden=16, layers=2, generator=torch.Generator().manual_seed(0),
                       dtype="float32")
    assert narrow.net[0].weight.dtype == torch.float32
    assert torch.equal(narrow.net[2].weight, wide.net[2].weight.float())
    x = torch.randn(3, 4, dtype=torch.float64)
    value, force = narrow(x), narrow.force(x)
    assert value.dtype == force.dtype == torch.float64
    # float32 rounding only: V and −∇V agree with the float64 network's to ~1e-7 relative.
    assert torch.allclose(value, wide(x), rtol=1e-5, atol=1e-6)
    assert torch.allclose(force, wide.force(x), rtol=1e-4, atol=1e-6)
    assert not torch.equal(value, wide(x))
    force.sum().backward()  # the double backward runs through the casts
    assert narrow.net[0].weight.grad.dtype == torch.float32
    with pytest.raises(ValueError, match="^dtype"):
        Potential(4, dtype="float16")


def test_contact_parameters_follow_the_authors_parametrisation():
    generator = torch.Generator().manual_seed(0)
    homogeneous = ContactParameters(make_task("CP3"), generator)
    assert homogeneous.raw_mu.shape == (1,) and homogeneous.mu().shape == (3,)
    hetero = ContactParameters(make_task("BP5"), generator)
    assert hetero.raw_mu.shape == (30,)
    assert float(hetero.raw_mu.min()) >= 0 and float(hetero.raw_mu.max()) <= 1  # U(0, 1)
    with torch.no_grad():
        hetero.raw_mu.fill_(-0.5)
        hetero.raw_cor.fill_(4.0)
    assert float(hetero.mu().max()) == 0.0 and float(hetero.cor().min()) == 1.0
    task = make_task("BP5")
    hetero.set_values(task.mu, task.cor)
    assert torch.allclose(hetero.mu(), task.mu) and torch.allclose(hetero.cor(), task.cor)
    with pytest.raises(ValueError, match="homogeneous"):
        homogeneous.set_values(torch.tensor([0.1, 0.2, 0.3]), torch.zeros(3))


def test_clnn_at_the_truth_reproduces_the_simulator_with_contacts():
    """A CLNN with the true potential, masses, μ and e reproduces ``simulate`` on BP5 to
    ~1e-9 (in fact to round-off), with gradients enabled."""
    task = make_task("BP5")
    x0, v0 = task.system.sample_state(6, np.random.default_rng(7))
    truth = simulate(task.system, x0, v0, 40, task.dt, ContactModel(), task.mu, task.cor)
    assert bool(truth.contact.any())  # the comparison covers contacts
    model = at_truth(ContactCLNN(task, "CM", 0), task)
    assert torch.is_grad_enabled()
    xs, vs = model.rollout(x0, v0, 40)
    assert xs.requires_grad  # the learned masses and coefficients are in the graph
    assert float((xs - truth.x).abs().max()) < 1e-9
    assert float((vs - truth.v).abs().max()) < 1e-9
    assert model.log.problems > 0 and model.log.fallbacks == 0


def test_chnn_and_clnn_agree_to_rk4_accuracy_on_the_chain_pendulum():
    task = make_task("CP3")
    x0, v0 = task.system.sample_state(4, np.random.default_rng(1))
    clnn = at_truth(ContactCLNN(task, "CM", 0), task)
    chnn = at_truth(ContactCHNN(task, "CM", 0), task)
    with torch.no_grad():
        xa, va = clnn.rollout(x0, v0, 20)
        xb, vb = chnn.rollout(x0, v0, 20)
    # One step differs by the local RK4 error (~1e-10 at dt = 0.01), 20 steps by ~1e-7.
    assert float((xa[:, 1] - xb[:, 1]).abs().max()) < 1e-8
    assert float((xa - xb).abs().max()) < 1e-6
    assert float((va - vb).abs().max()) < 1e-5


def test_chnn_field_keeps_the_constraints():
    """P(J∇H) is tangent to the constraint manifold: dΦ/dt = G ẋ = 0."""
    task = make_task("Gyro")
    x, v = task.system.sample_state(3, np.random.default_rng(0))
    inv_mass = task.system.inv_mass
    p = torch.linalg.solve(inv_mass, v.T).T
    xdot, pdot = hamiltonian_field(x, p, inv_mass, task.system.potential, task.system.constraints)
    G = task.system.constraints.jacobian(x)
    assert float((G @ xdot[..., None]).abs().max()) < 1e-10
    assert torch.allclose(xdot, v, atol=1e-10)  # v already satisfies the constraints
    # and the projected field's velocity change is the constrained acceleration (CLNN)
    from physid.contact.mechanics import acceleration

    accel = acceleration(x, v, inv_mass, task.system.force(x), task.system.constraints)
    assert torch.allclose(pdot @ inv_mass.T, accel, atol=1e-9)


@pytest.mark.parametrize("cls", [ContactCLNN, ContactCHNN])
def test_a_rollout_is_the_same_with_and_without_gradients(cls):
    # With gradients on, the momentum after a contact depends on the positions through the
    # impulse; the field must still take the partial derivatives of H (a total derivative
    # through the contact changed the CHNN's field by 0.34 at the next step).
    task, x, v = _collision_chunks("BP5")
    model = cls(task, "CM", 0)
    with torch.no_grad():
        xa, va = model.rollout(x[:, 0], v[:, 0], x.shape[1] - 1)
    xb, vb = model.rollout(x[:, 0], v[:, 0], x.shape[1] - 1)
    assert model.log.problems > 0 and vb.requires_grad
    assert float((xa - xb).abs().max()) < 1e-12
    assert float((va - vb).abs().max()) < 1e-12


def test_smooth_step_is_free_flight_without_forces():
    task = make_task("BP5")
    x, v = task.system.sample_state(2, np.random.default_rng(0))
    x1, v1 = smooth_step(x, v, 0.01, task.system.inv_mass, task.system.force, None)
    assert torch.allclose(x1, x + 0.01 * v) and torch.equal(v1, v)


def _collision_chunks(name: str, n: int = 12):
    task = make_task(name)
    data = datasets.generate(task, n, 0, 0, seed=2, p_collision=1.0)
    keep = data.train.collision
    assert bool(keep.any())
    return task, data.train.x[keep], data.train.v[keep]


@pytest.mark.parametrize("cls", [ContactCLNN, ContactCHNN])
def test_gradients_reach_masses_potential_and_contact_coefficients(cls):
    task, x, v = _collision_chunks("BP5")
    model = cls(task, "CM", 0)
    xs, vs = model.rollout(x[:, 0], v[:, 0], x.shape[1] - 1)
    loss = (xs - x).abs().mean() + (vs - v).abs().mean()
    loss.backward()
    for name in ("masses.log_mass", "potential.net.0.weight", "contact.raw_mu", "contact.raw_cor"):
        grad = dict(model.named_parameters())[name].grad
        assert grad is not None, name
        assert bool(torch.isfinite(grad).all()), name
        assert float(grad.abs().max()) > 0, name


def test_learned_regularisation_gets_a_gradient():
    task, x, v = _collision_chunks("CP3", n=16)
    model = ContactCLNN(task, "CMr", 0, learn_reg=True)
    assert abs(float(model.contact.reg()) - 0.01) < 1e-12
    xs, vs = model.rollout(x[:, 0], v[:, 0], x.shape[1] - 1)
    ((xs - x).abs().mean() + (vs - v).abs().mean()).backward()
    grad = model.contact.raw_reg.grad
    assert grad is not None and bool(torch.isfinite(grad)) and float(grad.abs()) > 0
    assert model.learned_parameters()["reg"] == pytest.approx(0.01)
    with pytest.raises(ValueError, match="variant"):
        ContactCLNN(task, "CM", 0, learn_reg=True)


def test_learned_parameters_are_plain_numbers():
    task = make_task("BD5")
    model = ContactCHNN(task, "CMr", 1)
    model.masses.set_values(*true_masses(task))
    params = model.learned_parameters()
    assert set(params) == {"mu", "cor", "masses", "mass_ratios", "moments", "reg"}
    assert all(isinstance(params[k], np.ndarray) for k in ("mu", "cor", "masses", "moments"))
    assert params["mu"].shape == (30,) and params["moments"].shape == (5, 2)
    np.testing.assert_allclose(params["mass_ratios"], [1, 2, 6, 8, 10], rtol=1e-12)
    assert params["reg"] == 0.01
    assert np.isnan(ContactCLNN(task, "CM", 1).learned_parameters()["reg"])


def test_same_seed_same_model():
    task = make_task("CP3")
    a, b = ContactCLNN(task, "CM", 5), ContactCLNN(task, "CM", 5)
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    c = ContactCLNN(task, "CM", 6)
    assert not torch.equal(a.potential.net[0].weight, c.potential.net[0].weight)


def test_a_diverging_rollout_is_returned_not_raised():
    task = make_task("BP5")
    model = ContactCLNN(task, "CM", 0)

    class Broken(nn.Module):
        def force(self, x):
            f = torch.zeros_like(x)
            f[0] = torch.nan
            return f

    model.potential = Broken()
    x0, v0 = task.system.sample_state(3, np.random.default_rng(0))
    with torch.no_grad():
        xs, vs = model.rollout(x0, v0, 5)
    assert not bool(torch.isfinite(xs[0, 1:]).any())
    assert bool(torch.isfinite(xs[1:]).all() & torch.isfinite(vs[1:]).all())


def test_bad_input_raises_naming_the_argument():
    task = make_task("BP5")
    with pytest.raises(ValueError, match="variant"):
        ContactCLNN(task, "LCP", 0)
    with pytest.raises(ValueError, match="seed"):
        ContactCHNN(task, "CM", -1)
    with pytest.raises(TypeError, match="task"):
        ContactCLNN("BP5", "CM", 0)
    model = ContactCLNN(task, "CM", 0)
    x0, v0 = task.system.sample_state(2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_steps"):
        model.rollout(x0, v0, 0)
    with pytest.raises(TypeError, match="n_steps"):
        model.rollout(x0, v0, 2.0)
    bad = x0.clone()
    bad[0, 0] = torch.nan
    with pytest.raises(ValueError, match="x0"):
        model.rollout(bad, v0, 1)
    with pytest.raises(ValueError, match="v0"):
        model.rollout(x0, v0[:1], 1)
    with pytest.raises(ValueError, match="x0"):
        model.rollout(x0[:, :4], v0, 1)
    with pytest.raises(TypeError, match="x0"):
        model.rollout(x0.float(), v0, 1)
    with pytest.raises(ValueError, match="n_coords"):
        Potential(0)


def test_restitution_reach_bounds_how_far_adamw_moves_e():
    """AdamW pulling e one way moves it about lr / 6 per step (e = r/6 + ½), so after N steps
    it has moved N lr / 6 (a little more: Adam's first steps overshoot lr slightly), and not
    further."""
    params = ContactParameters(make_task("CP3"), torch.Generator().manual_seed(0))
    with torch.no_grad():
        params.raw_cor.fill_(-2.5)  # e = 1/12, far from 1
    optimiser = torch.optim.AdamW([params.raw_cor], lr=1e-2)
    start = float(params.cor()[0])
    for _ in range(200):
        optimiser.zero_grad()
        (-params.cor().sum()).backward()
        optimiser.step()
    moved = float(params.cor()[0]) - start
    reach = restitution_reach(200, 1e-2)
    assert reach == pytest.approx(1 / 3)
    assert 0.95 * reach <= moved <= 1.06 * reach
    assert restitution_reach(0, 1e-2) == 0.0
    with pytest.raises(ValueError, match="^steps"):
        restitution_reach(-1, 1e-2)
    with pytest.raises(ValueError, match="^lr"):
        restitution_reach(10, 0.0)


def test_restitution_reach_under_the_cosine_schedule_is_the_sum_of_its_rates():
    from physid.contact.training import learning_rate

    for steps in (1, 2, 7, 300):
        rates = [learning_rate(1e-2, 1e-3, k, steps) for k in range(steps)]
        assert restitution_reach(steps, 1e-2, 1e-3) == pytest.approx(sum(rates) / 6, rel=1e-12)
    assert restitution_reach(1200, 1e-2, 1e-3) == pytest.approx(1.1)
    with pytest.raises(ValueError, match="^lr_final"):
        restitution_reach(10, 1e-2, -1.0)


def test_restitution_reach_of_a_run_stopped_early_sums_the_rates_it_took():
    from physid.contact.training import learning_rate

    rates = [learning_rate(1e-2, 1e-3, k, 800) for k in range(300)]
    assert restitution_reach(300, 1e-2, 1e-3, planned=800) == pytest.approx(sum(rates) / 6,
                                                                             rel=1e-12)
    assert restitution_reach(800, 1e-2, 1e-3, planned=800) == restitution_reach(800, 1e-2, 1e-3)
    assert restitution_reach(300, 1e-2, None, planned=800) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="^planned"):
        restitution_reach(300, 1e-2, 1e-3, planned=200)
