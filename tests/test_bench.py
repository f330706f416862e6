import json

import pytest

from physid.bench import Target, best_time, format_table, write_report


def test_target_direction():
    assert Target("speed", 6.0, 5.0, "x").met
    assert not Target("speed", 4.0, 5.0, "x").met
    assert Target("cost", 2.5, 3.0, "x", higher_is_better=False).met
    assert not Target("cost", 3.5, 3.0, "x", higher_is_better=False).met


def test_best_time_is_positive_and_checks_arguments():
    assert best_time(lambda: sum(range(100)), repeat=2) > 0
    with pytest.raises(ValueError, match="repeat"):
        best_time(lambda: None, repeat=0)


def test_write_report_json_shape(tmp_path, capsys):
    rows = [{"cells": 10, "seconds": 0.5}, {"cells": 88, "seconds": 1.25}]
    path = write_report("demo", rows, [Target("t", 1.0, 2.0, "s", False)], out_dir=tmp_path)
    payload = json.loads(path.read_text())
    assert payload["rows"] == rows
    assert payload["targets"] == [
        {"id": "t", "measured": 1.0, "target": 2.0, "unit": "s", "higher_is_better": False,
         "met": True}
    ]  # fmt: skip
    out = capsys.readouterr().out
    assert "1.25" in out and "-> met" in out
    assert format_table([]) == "(no rows)"
