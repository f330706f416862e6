"""Data sets: chunk selection, determinism, noise, storage, the LCP variant."""

import numpy as np
import pytest
import torch

from physid.contact import datasets
from physid.contact.integrate import Rollout
from physid.contact.tasks import make_task

#: The contact library computes in float64; tensors made here without a dtype follow.
pytestmark = pytest.mark.usefixtures("float64_default")


@pytest.fixture(scope="module")
def data():
    return datasets.generate("CP3", 6, 2, 2, seed=3)


def test_chunks_have_the_requested_shape_and_start_collision_free(data):
    system = make_task("CP3").system
    assert data.train.x.shape == (6, 5, system.n_coords)
    assert len(data.val) == 2 and len(data.test) == 2
    assert data.test_x.shape == (2, 101, system.n_coords)
    for split in (data.train, data.val, data.test):
        assert (system.detect(split.x[:, 0]).distance >= 0).all()
    assert data.log.problems > 0 and data.log.fallbacks == 0


def test_generation_is_deterministic(data):
    again = datasets.generate("CP3", 6, 2, 2, seed=3)
    torch.testing.assert_close(again.train.x, data.train.x)
    other = datasets.generate("CP3", 6, 2, 2, seed=4)
    assert not torch.equal(other.train.x, data.train.x)


def test_select_chunks_follows_the_impulses():
    # Three trajectories of 10 steps: impulses at steps 3 (first), none (second), all (third).
    contact = torch.zeros(3, 10, dtype=torch.bool)
    contact[0, 3] = True
    contact[2] = True
    x = torch.arange(3 * 11, dtype=torch.float64).reshape(3, 11, 1)
    rollout = Rollout(x=x, v=x.clone(), contact=contact, n_contacts=contact.long())
    chunks = datasets.select_chunks(rollout, 4, p_collision=1.0, rng=np.random.default_rng(0))
    start = chunks.start.tolist()
    assert chunks.collision.tolist() == [True, False, True]
    assert start[0] in (1, 2, 3)  # the chunk covers the impulse of step 3
    assert start[2] == 0  # only state 0 is collision-free
    torch.testing.assert_close(chunks.x[0, :, 0], x[0, start[0] : start[0] + 4, 0])
    free = datasets.select_chunks(rollout, 4, p_collision=0.0, rng=np.random.default_rng(0))
    assert free.collision.tolist() == [False, False, True]


def test_noise_is_seeded_and_has_its_standard_deviation(data):
    noisy = datasets.add_noise(data, 0.05, seed=1)
    assert noisy.noise == 0.05
    assert float((noisy.train.x - data.train.x).std()) == pytest.approx(0.05, rel=0.25)
    torch.testing.assert_close(datasets.add_noise(data, 0.05, seed=1).train.v, noisy.train.v)
    torch.testing.assert_close(noisy.test_x, data.test_x)  # full trajectories stay clean


def test_save_and_load_round_trip(data, tmp_path):
    path = datasets.save(data, tmp_path / "sub" / "cp3.npz")
    back = datasets.load(path)
    assert (back.task, back.model, back.seed) == ("CP3", "CM", 3)
    torch.testing.assert_close(back.train.x, data.train.x)
    assert torch.equal(back.test.collision, data.test.collision)


def test_lcp_variant_generates_data():
    lcp = datasets.generate("CP3-e", 3, 1, 1, seed=0, model="LCP")
    assert lcp.model == "LCP" and lcp.log.lcp > 0 and lcp.log.fast_exact == 0
