import math

import numpy as np
import pytest
import torch

from physid import sliding


def synthetic(mu: float, v0: float = 2.0, sample_every: int = 4, n_samples: int = 60):
    """Data made by the model itself, so the fit must recover ``mu`` exactly."""
    dt = sliding.BULLET_DT
    x = sliding.simulate_slide(
        torch.tensor(mu, dtype=torch.float64), v0, n_samples * sample_every, dt
    )
    return sliding.SlideData(
        t=dt * sample_every * np.arange(1, n_samples + 1),
        x=x[sample_every - 1 :: sample_every].numpy(),
        v0=v0,
        step_dt=dt,
        sample_every=sample_every,
        mu_effective=mu,
    )


def test_rollout_matches_the_discrete_closed_form():
    mu, v0, dt, n = 0.3, 2.0, 1 / 240, 300
    x = sliding.simulate_slide(torch.tensor([mu], dtype=torch.float64), v0, n, dt)[0].numpy()
    v = np.clip(v0 - mu * sliding.GRAVITY * dt * np.arange(1, n + 1), 0, None)
    np.testing.assert_allclose(x, dt * np.cumsum(v), rtol=0, atol=1e-12)


def test_stopping_distance_converges_at_first_order():
    dts = np.array([1e-2, 1e-3, 1e-4])
    errors = sliding.stopping_distance_error(2.0, 0.3, dts)
    np.testing.assert_allclose(errors, 2.0 * dts / 2, rtol=0.05)
    assert sliding.stopping_distance(2.0, 0.3) == pytest.approx(4 / (2 * 0.3 * 9.81))


def test_batched_rollout_has_the_batch_shape():
    mu = torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.float64)
    assert sliding.simulate_slide(mu, 1.0, 7, 0.01).shape == (2, 2, 7)


def test_gradient_matches_finite_differences():
    data = synthetic(0.3)
    mu = torch.tensor([0.17, 0.42], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda m: sliding.trajectory_loss(m, data), (mu,))
    landscape = sliding.loss_landscape(data, 0.05, 1.0, 50)
    assert landscape.max_relative_gradient_error < 1e-5


def test_fit_recovers_the_coefficient_of_model_data():
    fit = sliding.fit_friction(synthetic(0.3), mu_init=0.1, iterations=300, progress=False)
    assert fit.mu == pytest.approx(0.3, rel=1e-3)
    assert fit.losses[-1] < 1e-3 * fit.losses[0]
    assert len(fit.mus) == 300


def test_bullet_slide_obeys_coulomb_with_the_product_of_coefficients():
    data = sliding.bullet_slide(mu_box=0.5, mu_plane=0.6, v0=2.0, duration=1.0)
    assert data.mu_effective == pytest.approx(0.3)
    assert data.x.shape == (60,) and data.t[-1] == pytest.approx(1.0)
    # Bullet steps the same semi-implicit scheme: it stops v0*dt/2 short of v0²/(2μg).
    expected = sliding.stopping_distance(2.0, 0.3) - 2.0 * sliding.BULLET_DT / 2
    assert data.x[-1] == pytest.approx(expected, rel=5e-3)
    fit = sliding.fit_friction(data, iterations=300, progress=False)
    assert fit.mu == pytest.approx(0.3, rel=0.01)


def test_noise_is_seeded():
    data = synthetic(0.3)
    a, b = sliding.add_noise(data, 1e-3, seed=1), sliding.add_noise(data, 1e-3, seed=1)
    np.testing.assert_array_equal(a.x, b.x)
    assert not np.array_equal(a.x, sliding.add_noise(data, 1e-3, seed=2).x)
    assert np.std(a.x - data.x) == pytest.approx(1e-3, rel=0.3)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sliding.simulate_slide(torch.tensor([-0.1]), 1.0, 5, 0.01), "mu must be finite"),
        (lambda: sliding.simulate_slide(torch.tensor([math.nan]), 1.0, 5, 0.01), "mu must be"),
        (lambda: sliding.simulate_slide(0.3, 1.0, 5, 0.01), "mu must be a torch.Tensor"),
        (lambda: sliding.simulate_slide(torch.tensor([0.3]), 0.0, 5, 0.01), "v0 must be"),
        (lambda: sliding.simulate_slide(torch.tensor([0.3]), 1.0, 0, 0.01), "n_steps"),
        (lambda: sliding.stopping_distance(1.0, 0.0), "mu must be"),
        (lambda: sliding.bullet_slide(mu_box=-1.0), "mu_box"),
        (lambda: sliding.bullet_slide(v0=math.inf), "v0"),
        (lambda: sliding.bullet_slide(half_extents=(0.1, 0.0, 0.1)), "half_extents"),
        (lambda: sliding.fit_friction(synthetic(0.3), mu_init=0.0), "mu_init"),
        (lambda: sliding.loss_landscape(synthetic(0.3), 0.5, 0.1, 10), "mu_max must exceed"),
        (lambda: sliding.add_noise(synthetic(0.3), -1.0, 0), "sigma"),
        (lambda: sliding.sizes("huge"), "SCALE must be one of"),
    ],
)
def test_bad_input_is_a_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_pybullet_imports_without_its_banner():
    import subprocess
    import sys

    code = "from physid.quiet_bullet import import_pybullet as i; pb = i(); pb.connect(pb.DIRECT)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "build time" not in result.stdout + result.stderr
