from dataclasses import dataclass, replace

import numpy as np
import pytest

from physid.core.scales import SCALES, Sizes, SizeTable, check_scale, check_sizes


@dataclass(frozen=True)
class _Sizes(Sizes):
    ZERO = ("warmup",)

    scale: str
    steps: int
    warmup: int
    label: str = "free"
    duration: float = 1.0
    n_jobs: int = 1
    compiled: bool = True

    def check(self) -> None:
        if self.warmup >= self.steps:
            raise ValueError(f"warmup must be below steps = {self.steps}, got {self.warmup}")


@dataclass(frozen=True)
class _Other(Sizes):
    steps: int


def _table(**changes):
    return SizeTable(
        "x", **{s: _Sizes(s, 3, 0) for s in SCALES} | changes
    )


def test_check_scale_accepts_the_three_scales():
    assert [check_scale(s) for s in SCALES] == ["quick", "default", "paper"]


@pytest.mark.parametrize("bad", ["huge", "", None, 1, "Quick"])
def test_check_scale_rejects_unknown(bad):
    with pytest.raises(ValueError, match="SCALE must be one of"):
        check_scale(bad)


def test_size_table_looks_up_scales_and_refuses_broken_tables():
    table = _table()
    assert table["default"].scale == "default" and list(table) == list(SCALES)
    assert len(table) == 3 and "x" in repr(table)
    with pytest.raises(ValueError, match="huge"):
        table["huge"]
    with pytest.raises(KeyError, match="exactly the scales"):
        SizeTable("x", quick=_Sizes("quick", 3, 0))
    with pytest.raises(KeyError, match="exactly the scales"):
        _table(huge=_Sizes("quick", 3, 0))
    with pytest.raises(TypeError, match="one Sizes class"):
        _table(paper=_Other(3))
    with pytest.raises(TypeError, match="one Sizes class"):
        SizeTable("x", quick=1, default=2, paper=3)
    with pytest.raises(ValueError, match="scale='quick'"):
        _table(paper=_Sizes("quick", 3, 0))


def test_sizes_normalise_fields_by_type_and_name_bad_ones():
    sizes = _Sizes("quick", np.int64(3), 0, duration=np.float32(0.5), n_jobs=-1)
    assert type(sizes.steps) is int and sizes.steps == 3 and sizes.warmup == 0
    assert type(sizes.duration) is float and sizes.duration == 0.5
    good = _Sizes("quick", 3, 0)
    for changes, error, name in [
        ({"scale": "huge"}, ValueError, "SCALE"),
        ({"steps": 0}, ValueError, "steps"),
        ({"steps": 2.5}, TypeError, "steps"),
        ({"warmup": -1}, ValueError, "warmup"),
        ({"warmup": 3}, ValueError, "below steps"),  # the subclass's own check
        ({"duration": 0.0}, ValueError, "duration"),
        ({"duration": float("nan")}, ValueError, "duration"),
        ({"n_jobs": 0}, ValueError, "n_jobs"),
        ({"compiled": 1}, TypeError, "compiled"),
    ]:
        with pytest.raises(error, match=name):
            replace(good, **changes)
    assert _Sizes("quick", 3, 0, label=None).label is None  # not checked: the subclass's to check
    with pytest.raises(TypeError, match="dataclass instance"):
        check_sizes(_Sizes)
