import numpy as np
import pytest
import torch

from physid.sliding import model as sliding


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


def test_rollout_is_the_step_in_a_loop():
    mu = torch.tensor([0.2, 0.5], dtype=torch.float64)
    x, v = torch.zeros(2, dtype=torch.float64), torch.full((2,), 1.5, dtype=torch.float64)
    for _ in range(40):
        x, v = sliding.slide_step(x, v, mu, 0.01)
    np.testing.assert_array_equal(sliding.simulate_slide(mu, 1.5, 40, 0.01)[:, -1], x)


def test_batched_rollout_has_the_batch_shape():
    mu = torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=torch.float64)
    assert sliding.simulate_slide(mu, 1.0, 7, 0.01).shape == (2, 2, 7)


def test_gradient_matches_finite_differences():
    data = synthetic(0.3)
    mu = torch.tensor([0.17, 0.42], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda m: sliding.trajectory_loss(m, data), (mu,))
    landscape = sliding.loss_landscape(data, 0.05, 1.0, 50)
    assert landscape.max_relative_gradient_error < 1e-5


def test_landscape_of_model_data_has_one_minimum_at_the_truth():
    landscape = sliding.loss_landscape(synthetic(0.3), 0.1, 0.7, 61)
    np.testing.assert_allclose(landscape.minima, [0.3])
    assert landscape.argmin == pytest.approx(0.3)


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


def test_bullet_gradient_is_close_to_the_model_gradient():
    data = sliding.bullet_slide()
    check = sliding.bullet_gradient_check(data, 0.1, 0.9, 3)
    assert check.mu.shape == check.grad_model.shape == check.grad_bullet.shape == (3,)
    assert np.all(np.sign(check.grad_model) == np.sign(check.grad_bullet))
    assert check.max_relative_gap < 0.05


def test_bullet_damping_slows_the_box_and_friction_is_capped():
    free = sliding.bullet_slide()
    damped = sliding.bullet_slide(damping=sliding.BULLET_DEFAULT_DAMPING)
    assert damped.x[-1] < free.x[-1]
    # Bullet caps the product of the coefficients at 10, so a larger product is refused.
    with pytest.raises(ValueError, match="mu_box \\* mu_plane must be <= 10"):
        sliding.bullet_slide(mu_box=4.0, mu_plane=4.0)
    at_cap = sliding.bullet_slide(mu_box=10.0, mu_plane=1.0, v0=5.0)
    assert at_cap.mu_effective == pytest.approx(sliding.BULLET_MAX_FRICTION)


def test_noise_is_seeded():
    data = synthetic(0.3)
    a, b = sliding.add_noise(data, 1e-3, seed=1), sliding.add_noise(data, 1e-3, seed=1)
    np.testing.assert_array_equal(a.x, b.x)
    assert not np.array_equal(a.x, sliding.add_noise(data, 1e-3, seed=2).x)
    assert np.std(a.x - data.x) == pytest.approx(1e-3, rel=0.3)
    np.testing.assert_array_equal(sliding.add_noise(data, 1e-3, seed=np.int64(1)).x, a.x)


def test_numpy_and_torch_scalars_are_numbers():
    mu = torch.tensor(0.3, dtype=torch.float64)
    expected = sliding.simulate_slide(mu, 2.0, 10, 0.01)
    for v0, dt in ((np.float32(2.0), np.float64(0.01)), (torch.tensor(2), torch.tensor(0.01))):
        torch.testing.assert_close(sliding.simulate_slide(mu, v0, np.int64(10), dt), expected)
    assert sliding.stopping_distance(np.float32(2.0), torch.tensor(0.3)) == pytest.approx(
        sliding.stopping_distance(2.0, 0.3)
    )


def test_the_library_leaves_torch_settings_alone():
    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    sliding.fit_friction(synthetic(0.3), iterations=2, progress=False)
    sliding.loss_landscape(synthetic(0.3), 0.1, 0.5, 3)
    assert (torch.get_default_dtype(), torch.get_num_threads()) == (dtype, threads)


def test_pybullet_imports_without_its_banner():
    import subprocess
    import sys

    code = (
        "from physid.core.quiet_bullet import import_pybullet as i; "
        "pb = i(); pb.connect(pb.DIRECT)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "build time" not in result.stdout + result.stderr
