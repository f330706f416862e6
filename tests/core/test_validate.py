import numpy as np
import pytest
import torch

from physid.core.validate import (
    check_array,
    check_choice,
    check_choices,
    check_count,
    check_device,
    check_in_range,
    check_nonnegative,
    check_number,
    check_positive,
    check_seed,
    check_tensor,
)

NUMBERS = [
    2,
    2.0,
    np.float32(2.0),
    np.float64(2.0),
    np.int64(2),
    np.int8(2),
    torch.tensor(2.0),
    torch.tensor(2, dtype=torch.int32),
    torch.tensor(2.0, dtype=torch.float32),
    np.array(2.0),
]


@pytest.mark.parametrize("value", NUMBERS, ids=lambda v: f"{type(v).__name__}-{v!r}"[:40])
def test_numbers_of_every_kind_are_accepted(value):
    assert check_positive("mass", value) == 2.0
    assert isinstance(check_positive("mass", value), float)


@pytest.mark.parametrize(
    "value, error, message",
    [
        (float("nan"), ValueError, "mass must be finite"),
        (float("inf"), ValueError, "mass must be finite"),
        (-float("inf"), ValueError, "mass must be finite"),
        (np.float32("nan"), ValueError, "mass must be finite"),
        (0.0, ValueError, "mass must be > 0"),
        (-1, ValueError, "mass must be > 0"),
        (True, TypeError, "mass must be a real number"),
        ("1", TypeError, "mass must be a real number"),
        (None, TypeError, "mass must be a real number"),
        (torch.tensor([1.0, 2.0]), TypeError, "mass must be a real number"),
        (1 + 2j, TypeError, "mass must be a real number"),
    ],
)
def test_bad_numbers_name_the_argument(value, error, message):
    with pytest.raises(error, match=message):
        check_positive("mass", value)


def test_ranges_and_open_ends():
    assert check_nonnegative("mu", 0) == 0.0
    with pytest.raises(ValueError, match="mu must be >= 0"):
        check_nonnegative("mu", -1e-9)
    assert check_in_range("e", 1, 0, 1) == 1.0
    with pytest.raises(ValueError, match="e must be <= 1"):
        check_in_range("e", 1.5, 0, 1)
    with pytest.raises(ValueError, match="x must be < 1"):
        check_number("x", 1.0, high=1.0, high_open=True)


def test_counts_and_seeds():
    assert check_count("n", np.int64(3)) == 3
    assert check_count("n", torch.tensor(3)) == 3
    with pytest.raises(TypeError, match="n must be an integer"):
        check_count("n", 3.0)
    with pytest.raises(TypeError, match="n must be an integer"):
        check_count("n", True)
    with pytest.raises(ValueError, match="n must be >= 1"):
        check_count("n", 0)
    with pytest.raises(ValueError, match="n must be <= 4"):
        check_count("n", 5, maximum=4)
    assert check_seed("seed", 0) == 0
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        check_seed("seed", None)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        check_seed("seed", -1)


def test_choice():
    assert check_choice("kind", "a", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="kind must be one of 'a', 'b'; got 'c'"):
        check_choice("kind", "c", ("a", "b"))


def test_device():
    assert check_device("device", "cpu") == "cpu"
    assert check_device("device", torch.device("cpu")) == "cpu"
    assert check_device("device", "auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="device must name a torch device, got 'gpu'"):
        check_device("device", "gpu")
    with pytest.raises(ValueError, match="device must be a CPU or CUDA device, got 'meta'"):
        check_device("device", "meta")
    with pytest.raises(TypeError, match="device must be a device name"):
        check_device("device", 0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="device is 'cuda', but torch sees no GPU"):
            check_device("device", "cuda")


def test_choices():
    assert check_choices("kinds", ["a", "b", "a"], ("a", "b")) == ("a", "b", "a")
    for bad in ("a", (), None, 3):
        with pytest.raises(ValueError, match="kinds must be a non-empty sequence"):
            check_choices("kinds", bad, ("a", "b"))
    with pytest.raises(ValueError, match="kinds must be one of 'a', 'b'; got 'c'"):
        check_choices("kinds", ("a", "c"), ("a", "b"))


def test_tensors():
    x = torch.ones(3, 2, dtype=torch.float64)
    assert check_tensor("x", x, shape=(None, 2), dtype=torch.float64) is x
    with pytest.raises(ValueError, match=r"x must have shape \(\*, 3\), got \(3, 2\)"):
        check_tensor("x", x, shape=(None, 3))
    with pytest.raises(ValueError, match="x must have shape"):
        check_tensor("x", x, shape=(3,))
    with pytest.raises(TypeError, match="x must have dtype torch.float64"):
        check_tensor("x", x.float(), dtype=torch.float64)
    with pytest.raises(TypeError, match="floating-point"):
        check_tensor("x", torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match="torch tensor"):
        check_tensor("x", [1.0])
    with pytest.raises(ValueError, match="x must be finite, found nan"):
        check_tensor("x", torch.tensor([1.0, float("nan")]))
    with pytest.raises(ValueError, match="x must be > 0, found 0"):
        check_tensor("x", torch.tensor([1.0, 0.0]), positive=True)
    with pytest.raises(ValueError, match="x must be >= 0, found -1"):
        check_tensor("x", torch.tensor([1.0, -1.0]), nonnegative=True)
    # gradients are not disturbed by the check
    y = torch.ones(2, requires_grad=True)
    assert check_tensor("y", y) is y


def test_arrays():
    a = check_array("a", [[1, 2]], shape=(1, 2))
    assert a.dtype == np.float64
    with pytest.raises(ValueError, match="a must be finite"):
        check_array("a", [np.inf])
    with pytest.raises(TypeError, match="a must be an array of real numbers"):
        check_array("a", ["x"])


def test_edge_cases_name_the_argument():
    with pytest.raises(ValueError, match="x must be finite"):
        check_positive("x", 10**400)
    with pytest.raises(ValueError, match="kind must be one of"):
        check_choice("kind", np.array([1, 2]), (1, 2))
    assert check_choice("n", np.int64(4), (4, 16)) == 4
    with pytest.raises(ValueError, match="seed must be <="):
        check_seed("seed", 2**64)
    reversed_ = check_array("a", np.arange(5.0)[::-1])
    assert reversed_[0] == 4.0
    for bad in (["1.5"], [True, False], [1 + 2j]):
        with pytest.raises(TypeError, match="a must be an array of real numbers"):
            check_array("a", bad)
    grad = torch.ones(2, requires_grad=True)
    assert check_array("a", grad).tolist() == [1.0, 1.0]
