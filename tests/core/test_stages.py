"""The stage clock a chapter closes with (:mod:`physid.core.stages`)."""

from __future__ import annotations

import time

import pytest

from physid.core.stages import StageClock


def test_stages_add_up_and_an_inner_stage_counts_in_the_outer_one():
    clock = StageClock()

    @clock.stage
    def inner(seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    @clock.stage
    def outer() -> float:
        return inner(0.02) + inner(0.02)

    assert outer() == pytest.approx(0.04)
    assert inner(0.03) == 0.03
    rows = clock.rows()
    assert [r["stage"] for r in rows] == ["outer", "inner", "all stages"]
    by_name = {r["stage"]: r for r in rows}
    assert by_name["outer"]["calls"] == 1 and by_name["inner"]["calls"] == 1
    assert by_name["outer"]["seconds"] >= 0.04
    assert 0.03 <= by_name["inner"]["seconds"] < by_name["outer"]["seconds"]
    assert by_name["all stages"]["seconds"] == pytest.approx(
        by_name["outer"]["seconds"] + by_name["inner"]["seconds"])
    assert sum(r["share"] for r in rows[:-1]) == pytest.approx(1.0)


def test_a_stage_that_raises_still_counts_and_reset_forgets():
    clock = StageClock()

    @clock.stage
    def failing() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing()
    assert clock.rows()[0]["stage"] == "failing"
    clock.reset()
    assert clock.rows() == [{"stage": "all stages", "calls": 0, "seconds": 0.0, "share": 0.0}]
