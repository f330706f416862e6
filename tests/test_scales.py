import pytest

from physid.scales import SCALES, check_scale, select


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
