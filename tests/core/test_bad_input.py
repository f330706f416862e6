"""Bad input to :class:`physid.core.target.Limits` fails at once, naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

from physid.core.target import Limits


@pytest.mark.parametrize(
    "names, duplicates",
    [
        (("l1", "l1"), r"\['l1'\]"),
        (("a", "b", "a", "c", "b"), r"\['a', 'b'\]"),
        (["k", "k", "k"], r"\['k'\]"),
    ],
)
def test_limits_refuse_repeated_names(names, duplicates):
    n = len(names)
    with pytest.raises(ValueError, match=rf"^names must be distinct, got {duplicates} more"):
        Limits(names, np.zeros(n), np.ones(n))


def test_limits_with_distinct_names_still_work():
    limits = Limits(["a", "b"], [0, 1], [1, 2])
    assert limits.names == ("a", "b") and limits.dim == 2
