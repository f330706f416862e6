"""Cell objects, the five objects of the paper, and pushes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from physid.pushing import OBJECT_NAMES, Push, contact_face, from_mask, load_object, random_pushes


@pytest.fixture(scope="module")
def objects():
    return {name: load_object(name) for name in OBJECT_NAMES}


def test_five_objects_have_70_to_100_cells_centred(objects):
    assert set(objects) == {"hammer", "crimp", "ranch", "toolbox", "book"}
    for name, obj in objects.items():
        assert 70 <= len(obj) <= 100, name
        assert obj.name == name
        assert obj.centres.shape == (len(obj), 2)
        assert float(obj.centres.mean(0).abs().max()) < 1e-12
        # Neighbouring cells are one cell side apart.
        gaps = torch.cdist(obj.centres, obj.centres) + 1e9 * torch.eye(len(obj))
        np.testing.assert_allclose(gaps.min(1).values.numpy(), obj.cell_side, rtol=1e-9)


def test_ground_truth_distributions_follow_the_paper(objects):
    def region(obj, letter):
        mask = obj.region_mask(letter)
        return obj.masses[mask], obj.frictions[mask]

    head_m, _ = region(objects["hammer"], "H")
    handle_m, _ = region(objects["hammer"], "w")
    assert head_m.min() > 3 * handle_m.max()  # iron head, wooden handle

    crimp_m, crimp_mu = region(objects["crimp"], "C")
    grip_m, grip_mu = region(objects["crimp"], "h")
    assert crimp_m.min() > grip_m.max() and crimp_mu.min() > 2 * grip_mu.max()

    ends_m, ends_mu = region(objects["ranch"], "E")
    shaft_m, shaft_mu = region(objects["ranch"], "m")
    assert (shaft_mu == 0).all() and (ends_mu > 0).all()
    assert shaft_m.max() < 0.01 * ends_m.min()

    box = objects["toolbox"]
    left = box.centres[:, 0] < 0
    assert box.masses[left].sum() > 2 * box.masses[~left].sum()

    book = objects["book"]
    thick_m, thick_mu = region(book, "T")
    thin_m, thin_mu = region(book, "t")
    assert thick_m.sum() > 1.5 * thin_m.sum() and torch.equal(thick_mu.unique(), thin_mu.unique())
    thick_x = book.centres[book.region_mask("T"), 0]
    assert thick_x.max() < book.centres[book.region_mask("t"), 0].min()  # thick side on the left


def test_mask_rows_run_down_and_cells_follow_row_major_order():
    obj = from_mask([[True, True], [True, False]], 0.1, [1.0, 2.0, 3.0], 0.5)
    expected = np.array([[0.05, 0.05], [0.15, 0.05], [0.05, -0.05]])
    np.testing.assert_allclose(obj.centres.numpy(), expected - expected.mean(0), atol=1e-12)
    assert obj.masses.tolist() == [1.0, 2.0, 3.0]
    np.testing.assert_allclose(obj.inertias.numpy(), obj.masses.numpy() * 0.01 / 6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"masses": [1.0, 0.0, 1.0]}, r"masses must be > 0, found 0\.0"),
        ({"masses": [1.0, -2.0, 1.0]}, r"masses must be > 0, found -2\.0"),
        ({"masses": [1.0, float("nan"), 1.0]}, r"masses must be finite, found nan"),
        ({"frictions": [0.3, -0.1, 0.2]}, r"frictions must be >= 0, found -0\.1"),
        ({"frictions": [0.3, 0.2, float("inf")]}, r"frictions must be finite, found inf"),
        ({"masses": [1.0, 1.0]}, r"masses must have shape \(3,\)"),
        ({"cell_side": -0.1}, r"cell_side must be > 0"),
    ],
)
def test_bad_parameters_raise_naming_the_argument(kwargs, message):
    args = {"mask": [[1, 1], [1, 0]], "cell_side": 0.1, "masses": 1.0, "frictions": 0.5}
    with pytest.raises(ValueError, match=message):
        from_mask(**{**args, **kwargs})


def test_empty_and_disconnected_masks_raise():
    with pytest.raises(ValueError, match="mask is empty"):
        from_mask(np.zeros((3, 3), bool), 0.1, 1.0, 0.5)
    with pytest.raises(ValueError, match="mask is not 4-connected: 1 of 2 cells"):
        from_mask([[1, 0], [0, 1]], 0.1, 1.0, 0.5)  # diagonal neighbours only


def test_with_params_validates(objects):
    hammer = objects["hammer"]
    heavier = hammer.with_params(masses=2 * hammer.masses)
    assert torch.equal(heavier.masses, 2 * hammer.masses) and heavier.centres.equal(hammer.centres)
    with pytest.raises(ValueError, match="frictions must be >= 0"):
        hammer.with_params(frictions=-hammer.frictions)


def test_exposed_faces_skip_holes():
    square = from_mask(np.ones((2, 2), bool), 1.0, 1.0, 0.5)
    cells, mids, normals = square.exposed_faces()
    assert len(cells) == 8
    # Inward normals point from the face midpoint towards the cell centre.
    np.testing.assert_allclose(mids + 0.5 * normals, square.centres.numpy()[cells], atol=1e-12)
    ring = np.ones((3, 3), bool)
    ring[1, 1] = False
    assert len(from_mask(ring, 1.0, 1.0, 0.5).exposed_faces()[0]) == 12


def test_push_validation():
    with pytest.raises(ValueError, match="direction must be a unit vector"):
        Push((0.0, 0.0), (1.0, 1.0))
    with pytest.raises(ValueError, match="speed must be > 0"):
        Push((0.0, 0.0), (1.0, 0.0), speed=0.0)
    with pytest.raises(ValueError, match="duration must be finite"):
        Push((0.0, 0.0), (1.0, 0.0), duration=float("inf"))
    with pytest.raises(ValueError, match="contact must be finite"):
        Push((0.0, float("nan")), (1.0, 0.0))


def test_pushes_that_miss_the_object_raise(objects):
    box = objects["toolbox"]  # 14 × 6 cells of 30 mm: x in [−0.21, 0.21], y in [−0.09, 0.09]
    cell, normal = contact_face(box, Push((0.0, -0.09), (0.0, 1.0)))
    np.testing.assert_allclose(normal, [0.0, 1.0])
    assert box.centres[cell, 1] == box.centres[:, 1].min()
    with pytest.raises(ValueError, match=r"push\.contact .* is not on the outer boundary"):
        contact_face(box, Push((0.0, -0.2), (0.0, 1.0)))
    with pytest.raises(ValueError, match=r"push\.contact .* is not on the outer boundary"):
        contact_face(box, Push((0.0, 0.0), (0.0, 1.0)))  # inside
    with pytest.raises(ValueError, match=r"push\.direction .* does not point into"):
        contact_face(box, Push((0.0, -0.09), (0.0, -1.0)))
    with pytest.raises(ValueError, match=r"push\.direction .* does not point into"):
        contact_face(box, Push((0.0, -0.09), (1.0, 0.0)))  # tangential
    ranch = objects["ranch"]
    hole = ranch.centres[ranch.grid[:, 1] == 28].mean(0).numpy()  # next to the box-end hole
    with pytest.raises(ValueError, match="not on the outer boundary"):
        contact_face(ranch, Push((hole[0] + 0.005, hole[1]), (-1.0, 0.0)))


def test_random_pushes_are_seeded_and_valid(objects):
    crimp = objects["crimp"]
    first = random_pushes(crimp, 12, seed=7)
    assert first == random_pushes(crimp, 12, seed=7)
    assert first != random_pushes(crimp, 12, seed=8)
    for push in first:
        _, normal = contact_face(crimp, push)
        angle = math.acos(min(1.0, float(np.dot(normal, push.direction))))
        assert angle <= math.radians(20) + 1e-12
        assert push.speed == 0.2 and push.duration == 1.0
    with pytest.raises(ValueError, match="n must be >= 1"):
        random_pushes(crimp, 0, seed=1)


def test_unknown_object_name():
    with pytest.raises(ValueError, match="name must be one of"):
        load_object("spanner")


def test_the_objects_are_the_files_of_the_data_folder_in_their_order(tmp_path):
    from physid.pushing.objects import DATA_DIR, object_names

    assert OBJECT_NAMES == ("hammer", "crimp", "ranch", "toolbox", "book")
    assert set(OBJECT_NAMES) == {p.stem for p in DATA_DIR.glob("*.txt")}
    (tmp_path / "b.txt").write_text("name b\norder 2\ngrid\nx\n")
    (tmp_path / "a.txt").write_text("name a\norder 3\ngrid\nx\n")
    (tmp_path / "c.txt").write_text("name c\ngrid\nx\n")
    assert object_names(tmp_path) == ("b", "a", "c")
