import json

import pytest

from physid.core.bench import MIN_REPEATS, Target, Timing, interleaved, ratio, write_report


def test_target_direction():
    assert Target("speed", 6.0, 5.0, "x").met
    assert not Target("speed", 4.0, 5.0, "x").met
    assert Target("cost", 2.5, 3.0, "x", higher_is_better=False).met
    assert not Target("cost", 3.5, 3.0, "x", higher_is_better=False).met


def test_interleaved_runs_contenders_in_turn_and_checks_arguments():
    calls = []
    timings = interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")})
    # one warm-up each, then a, b alternating
    assert calls == ["a", "b"] * (MIN_REPEATS + 1)
    assert len(timings["a"].samples) == MIN_REPEATS and timings["a"].median >= 0
    with pytest.raises(ValueError, match="repeat must be >= 5"):
        interleaved({"a": lambda: None}, repeat=3)
    with pytest.raises(ValueError, match="contenders"):
        interleaved({})


def test_interleaved_min_seconds_calls_a_fast_contender_in_runs_and_a_slow_one_once():
    import time

    calls = []

    def slow():
        calls.append("slow")
        time.sleep(0.02)

    timings = interleaved({"fast": lambda: calls.append("fast"), "slow": slow}, min_seconds=0.01)
    # warm-up and the sizing call of each, then per repeat a run of fast calls and one slow
    runs = "".join("f" if c == "fast" else "s" for c in calls[4:])
    assert runs.count("s") == MIN_REPEATS and all(len(r) > 1 for r in runs.split("s")[:-1])
    assert timings["slow"].median >= 0.02 > 10 * timings["fast"].median
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="min_seconds"):
            interleaved({"a": lambda: None}, min_seconds=bad)


def test_ratio_is_taken_repeat_by_repeat_and_judged_on_the_median():
    slow = Timing((10.0, 12.0, 30.0, 11.0, 10.0))
    fast = Timing((1.0, 1.0, 1.0, 1.0, 2.0))
    r = ratio(slow, fast)
    assert r.samples == (10.0, 12.0, 30.0, 11.0, 5.0)
    assert r.median == 11.0 and (r.low, r.high) == (5.0, 30.0) and r.spread == "5–30"
    target = Target.from_timing("speedup", r, 10.0, "x")
    assert target.met and target.spread == (5.0, 30.0)
    with pytest.raises(ValueError, match="as many repeats"):
        ratio(slow, Timing((1.0,)))


def test_write_report_json_shape(tmp_path, capsys):
    rows = [{"cells": 10, "seconds": 0.5}, {"cells": 88, "seconds": 1.25}]
    path = write_report("demo", rows, [Target("t", 1.0, 2.0, "s", False)], out_dir=tmp_path)
    payload = json.loads(path.read_text())
    assert payload["rows"] == rows
    assert payload["targets"] == [
        {"id": "t", "measured": 1.0, "target": 2.0, "unit": "s", "higher_is_better": False,
         "spread": None, "met": True}
    ]
    out = capsys.readouterr().out
    assert "1.25" in out and "-> met" in out
