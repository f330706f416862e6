import math

import pytest

from physid.book.tables import format_cell, format_text, show_table, table_html

ROWS = [
    {"estimator": "CSVGD", "KL": 0.3612, "runs": 3},
    {"estimator": "CEM <GMM>", "KL": math.nan, "runs": 12000},
]


def test_cells():
    assert format_cell(0.123456) == "0.123"
    assert format_cell(math.nan) == "–"
    assert format_cell(None) == ""
    assert format_cell(True) == "yes"
    assert format_cell(12000) == "12,000"
    assert format_cell(float("inf")) == "∞"
    assert format_cell((1.0, 2.00012, 6.0036)) == "(1, 2, 6)"
    assert format_cell([1.0, 2.00012, 6.0036], digits=5) == "(1, 2.0001, 6.0036)"
    assert format_cell(()) == "()"
    assert format_cell(("a", 1)) == "('a', 1)"


def test_html_is_a_real_escaped_table():
    text = table_html(ROWS, caption="Table 1: KL")
    assert text.startswith('<table class="physid-table table">')
    assert "<caption>Table 1: KL</caption>" in text
    assert "CEM &lt;GMM&gt;" in text and "<td" in text and "|" not in text
    assert '<th style="text-align: right">KL</th>' in text
    assert '<th style="text-align: left">estimator</th>' in text


def test_text_and_errors():
    text = format_text(ROWS)
    assert text.splitlines()[0].split() == ["estimator", "KL", "runs"]
    with pytest.raises(ValueError, match="at least one row"):
        format_text([])
    with pytest.raises(ValueError, match=r"rows\[1\] has the columns"):
        format_text([{"a": 1}, {"b": 2}])


def test_show_table_prints_text_outside_a_kernel(capsys):
    show_table(ROWS, caption="KL")
    assert "CSVGD" in capsys.readouterr().out


def test_numpy_and_torch_scalars():
    import numpy as np
    import torch

    assert format_cell(np.bool_(True)) == "yes"
    assert format_cell(torch.tensor(0.5)) == "0.5"
    assert format_cell(np.float32(0.25)) == "0.25"
    assert format_cell(np.array([1.0, 1.70520469])) == "(1, 1.71)"
    assert format_cell(torch.tensor([0.5, 2.0])) == "(0.5, 2)"
