"""Input validation shared by every part of the library: one place, one wording.

Every public function and constructor checks its arguments with these helpers before it does
any work, so bad input fails at the entry point with a :class:`ValueError` (or a
:class:`TypeError` for a value of the wrong kind) whose message names the argument and the
value. Numbers may be Python, numpy or 0-d torch scalars of any int or float dtype; a bool is
never a number.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = [
    "as_number",
    "check_array",
    "check_choice",
    "check_choices",
    "check_count",
    "check_device",
    "check_in_range",
    "check_nonnegative",
    "check_number",
    "check_positive",
    "check_seed",
    "check_tensor",
]


def _scalar(value: Any) -> Any:
    """Unwrap a 0-d numpy array or torch tensor; leave anything else as it is."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1 or value.dim() != 0:
            return value
        if value.dtype == torch.bool or value.is_complex():
            return value
        return value.item()
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def as_number(name: str, value: Any) -> float:
    """``value`` as a Python float if it is a real number (not a bool); else a TypeError."""
    scalar = _scalar(value)
    if isinstance(scalar, bool | np.bool_) or not isinstance(scalar, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        return float(scalar)
    except OverflowError:
        raise ValueError(f"{name} must be finite, got {value!r}") from None


def check_number(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number within ``[low, high]`` (an end is open when ``*_open``)."""
    number = as_number(name, value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (number < low or (low_open and number == low)):
        relation = ">" if low_open else ">="
        raise ValueError(f"{name} must be {relation} {low:g}, got {value!r}")
    if high is not None and (number > high or (high_open and number == high)):
        relation = "<" if high_open else "<="
        raise ValueError(f"{name} must be {relation} {high:g}, got {value!r}")
    return number


def check_positive(name: str, value: Any) -> float:
    """A finite number > 0."""
    return check_number(name, value, low=0.0, low_open=True)


def check_nonnegative(name: str, value: Any) -> float:
    """A finite number >= 0."""
    return check_number(name, value, low=0.0)


def check_in_range(name: str, value: Any, low: float, high: float) -> float:
    """A finite number in the closed interval ``[low, high]``."""
    return check_number(name, value, low=low, high=high)


def check_count(name: str, value: Any, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer (Python, numpy or 0-d torch) with ``minimum <= value <= maximum``.

    A float is refused even when it is integral: a count written as ``4.0`` is a bug.
    """
    scalar = _scalar(value)
    if isinstance(scalar, bool | np.bool_) or not isinstance(scalar, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    count = int(scalar)
    if count < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and count > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return count


#: The largest seed every generator of the book accepts (numpy's legacy seeding is 32-bit).
MAX_SEED = 2**32 - 1


def check_seed(name: str, value: Any) -> int:
    """An integer seed in ``[0, MAX_SEED]``; ``None`` is refused: it would not be reproducible."""
    if value is None:
        raise ValueError(f"{name} must be a non-negative integer (None would not be reproducible)")
    return check_count(name, value, minimum=0, maximum=MAX_SEED)


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` if it is one of ``choices``."""
    try:
        found = bool(value in choices)
    except (TypeError, ValueError):
        found = False
    if not found:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {options}; got {value!r}")
    return value


def check_device(name: str, value: Any) -> str:
    """``value`` as the name of a torch device this machine has (``"cpu"``, ``"cuda"``,
    ``"cuda:1"``, …); ``"auto"`` is the first GPU when torch sees one, else the CPU."""
    if value == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not isinstance(value, str | torch.device):
        raise TypeError(f"{name} must be a device name or a torch.device, got {value!r}")
    try:
        device = torch.device(value)
    except RuntimeError as error:
        raise ValueError(f"{name} must name a torch device, got {value!r}") from error
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name} is {value!r}, but torch sees no GPU on this machine")
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} must be a CPU or CUDA device, got {value!r}")
    return str(device)


def check_choices(name: str, values: Any, choices: Sequence[Any]) -> tuple[Any, ...]:
    """``values`` as a tuple if it is a non-empty sequence (not a string) of ``choices``."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
        raise ValueError(f"{name} must be a non-empty sequence of choices, got {values!r}")
    return tuple(check_choice(name, value, choices) for value in values)


def _check_shape(name: str, shape: tuple[int, ...], expected: Sequence[int | None]) -> None:
    if len(shape) != len(expected) or any(
        e is not None and s != e for s, e in zip(shape, expected, strict=False)
    ):
        wanted = "(" + ", ".join("*" if e is None else str(e) for e in expected) + ")"
        raise ValueError(f"{name} must have shape {wanted}, got {tuple(shape)}")


def check_tensor(
    name: str,
    value: Any,
    *,
    shape: Sequence[int | None] | None = None,
    dtype: torch.dtype | None = None,
    finite: bool = True,
    nonnegative: bool = False,
    positive: bool = False,
) -> torch.Tensor:
    """A real floating torch tensor with the given ``shape`` (``None`` matches any size).

    ``dtype`` is the dtype the caller computes in: a tensor of another floating dtype is a
    TypeError (so float32 input is not silently mixed with float64), and a non-floating one
    too. Values must be finite (unless ``finite=False``) and, when asked, >= 0 or > 0.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if dtype is not None and value.dtype != dtype:
        raise TypeError(f"{name} must have dtype {dtype}, got {value.dtype}")
    if shape is not None:
        _check_shape(name, tuple(value.shape), shape)
    _check_values(name, value.detach(), finite, nonnegative, positive)
    return value


def check_array(
    name: str,
    value: Any,
    *,
    shape: Sequence[int | None] | None = None,
    finite: bool = True,
    nonnegative: bool = False,
    positive: bool = False,
) -> np.ndarray:
    """``value`` (real numbers: a sequence, array or tensor) as a float64 numpy array.

    ``shape`` gives the expected shape (``None`` matches any size). Strings, bools and complex
    numbers are a TypeError.
    """
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    raw = np.asarray(value)
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be an array of real numbers, got {value!r}")
    array = np.ascontiguousarray(raw, dtype=float)
    if shape is not None:
        _check_shape(name, array.shape, shape)
    _check_values(name, array, finite, nonnegative, positive)
    return array


#: Tensor dtypes whose CPU values are checked through numpy (a few microseconds less per check
#: than torch's operators, which validation at every entry point pays).
_NUMPY_DTYPES = (torch.float64, torch.float32, torch.float16)


def _check_values(
    name: str, values: torch.Tensor | np.ndarray, finite: bool, nonnegative: bool,
    positive: bool,
) -> None:
    if isinstance(values, torch.Tensor) and values.device.type == "cpu" and (
            values.dtype in _NUMPY_DTYPES):
        values = values.resolve_conj().resolve_neg().numpy()
    if isinstance(values, np.ndarray):
        lib, first = np, lambda a: a.flat[0].item()
    else:
        lib, first = torch, lambda a: a.flatten()[0].item()
    if finite and not bool(lib.isfinite(values).all()):
        bad = first(values[~lib.isfinite(values)])
        raise ValueError(f"{name} must be finite, found {bad}")
    if positive and bool((values <= 0).any()):
        bad = first(values[values <= 0])
        raise ValueError(f"{name} must be > 0, found {bad}")
    if nonnegative and bool((values < 0).any()):
        bad = first(values[values < 0])
        raise ValueError(f"{name} must be >= 0, found {bad}")
