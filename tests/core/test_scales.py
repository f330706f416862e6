from dataclasses import dataclass

import numpy as np
import pytest

from physid.core.scales import SCALES, check_scale, check_sizes, select


@dataclass(frozen=True)
class _Sizes:
    scale: str
    steps: int
    warmup: int
    label: str = "free"
    n_jobs: int = 1
    compiled: bool = True

    def __post_init__(self) -> None:
        check_sizes(self, zero=("warmup",), skip=("label",))


def test_check_scale_accepts_the_three_scales():
    assert [check_scale(s) for s in SCALES] == ["quick", "default", "paper"]


@pytest.mark.parametrize("bad", ["huge", "", None, 1, "Quick"])
def test_check_scale_rejects_unknown(bad):
    with pytest.raises(ValueError, match="SCALE must be one of"):
        check_scale(bad)


def test_select_picks_entry_and_reports_incomplete_tables():
    table = {"quick": 1, "default": 2, "paper": 3}
    assert select(table, "default", "x") == 2
    with pytest.raises(KeyError, match="lack the scale"):
        select({"quick": 1}, "quick", "broken table")
    with pytest.raises(ValueError, match="huge"):
        select(table, "huge", "x")


def test_check_sizes_normalises_counts_and_names_bad_fields():
    sizes = _Sizes("quick", np.int64(3), 0, n_jobs=-1)
    assert type(sizes.steps) is int and sizes.steps == 3 and sizes.warmup == 0
    for changes, error, name in [
        ({"scale": "huge"}, ValueError, "SCALE"),
        ({"steps": 0}, ValueError, "steps"),
        ({"steps": 2.5}, TypeError, "steps"),
        ({"warmup": -1}, ValueError, "warmup"),
        ({"n_jobs": 0}, ValueError, "n_jobs"),
        ({"compiled": 1}, TypeError, "compiled"),
    ]:
        with pytest.raises(error, match=name):
            _Sizes(**{"scale": "quick", "steps": 3, "warmup": 0, **changes})
    assert _Sizes("quick", 3, 0, label=None).label is None  # skipped: the caller's to check
    with pytest.raises(TypeError, match="dataclass instance"):
        check_sizes(_Sizes)
