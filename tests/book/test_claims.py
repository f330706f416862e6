import json

import nbformat
import numpy as np
import pytest

from physid.book.claims import (
    CLAIM_KEY,
    Claim,
    check_unique,
    claims_from_notebook,
    load_claims,
    make_claim,
    record_claim,
    report_markdown,
    summary_line,
    write_claims,
)

GOOD = dict(
    id="tutorial-some-thing",
    statement="A statement.",
    paper=0.3,
    ours="0.2996",
    criterion="within 1 %",
    holds=True,
    scale="quick",
    section="some-section",
)


def test_make_claim_formats_numbers_and_keeps_text():
    claim = make_claim(**GOOD)
    assert claim.paper == "0.3" and claim.ours == "0.2996" and claim.source == "tutorial"


def test_numpy_bool_is_accepted_as_holds():
    assert make_claim(**{**GOOD, "holds": np.float64(0.1) < 1}).holds is True


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("id", "nature2030-x", "id must look like"),
        ("id", "tutorial-Upper", "id must look like"),
        ("id", "tutorial", "id must look like"),
        ("statement", "  ", "statement must be"),
        ("criterion", "", "criterion must be"),
        ("holds", 1, "holds must be True or False"),
        ("holds", "yes", "holds must be True or False"),
        ("paper", float("nan"), "paper must be finite"),
        ("ours", True, "ours must be a number or a string"),
        ("ours", "", "ours must be a number"),
        ("scale", "huge", "SCALE must be one of"),
        ("section", "", "section must be the MyST label"),
        ("section", "Has Spaces", "section must be the MyST label"),
        ("why", "Because.", "holds, so it takes no why"),
    ],
)
def test_make_claim_rejects_bad_fields(field, value, message):
    with pytest.raises(ValueError, match=message):
        make_claim(**{**GOOD, field: value})


FAILING = {**GOOD, "holds": False, "why": "The model is coarser.", "cause": "open"}


def test_a_failing_claim_needs_a_why():
    with pytest.raises(ValueError, match="why must say"):
        make_claim(**{**FAILING, "why": ""})
    with pytest.raises(ValueError, match="why must say"):
        make_claim(**{**FAILING, "why": "   "})
    claim = make_claim(**{**FAILING, "why": " The model\n is coarser. "})
    assert claim.why == "The model is coarser."


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"cause": ""}, r"cause must say whose failure.*\('paper', 'setup', 'open'\); got ''"),
        ({"cause": "ours"}, "cause must say whose failure.*got 'ours'"),
        ({"cause": "paper"}, "blames the paper, so ablation must be the MyST label"),
        ({"cause": "paper", "ablation": "Not A Label"}, "ablation must be the MyST label"),
        ({"cause": "setup", "ablation": "some-section"}, "the cause 'setup' takes none"),
    ],
)
def test_a_failing_claim_says_whose_failure_it_is(fields, message):
    with pytest.raises(ValueError, match=message):
        make_claim(**{**FAILING, **fields})
    claim = make_claim(**{**FAILING, "cause": "paper", "ablation": "the-ablation"})
    assert (claim.cause, claim.ablation) == ("paper", "the-ablation")


def test_a_holding_claim_takes_no_cause():
    with pytest.raises(ValueError, match="holds, so it takes no cause"):
        make_claim(**{**GOOD, "cause": "open"})


def test_record_claim_emits_markdown_and_json(capsys):
    assert record_claim(**GOOD) is None
    # Outside a kernel IPython prints the text/plain form.
    assert "tutorial-some-thing" in capsys.readouterr().out


def test_claims_round_trip_through_a_notebook_and_json(tmp_path):
    claim = make_claim(**GOOD)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("record_claim(...)")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data", data={"text/plain": "x"}, metadata={CLAIM_KEY: claim.as_dict()}
        ),
        nbformat.v4.new_output("stream", text="noise"),
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), cell]
    (found,) = claims_from_notebook(nb, "book/chapter")
    assert found.chapter == "book/chapter" and found.id == claim.id
    path = write_claims([found], tmp_path / "out" / "claims.json")
    assert json.loads(path.read_text())[0]["chapter"] == "book/chapter"
    assert load_claims(path) == [found]


def test_duplicate_ids_name_both_chapters():
    a = make_claim(**GOOD)
    claims = [Claim(**{**a.as_dict(), "chapter": c}) for c in ("book/a", "book/b")]
    with pytest.raises(ValueError, match="book/a.*book/b"):
        check_unique(claims)


def test_report_groups_by_paper_with_verdict_first_and_links():
    song = make_claim(**{**FAILING, "id": "song2020-a", "statement": "x | y", "why": "Round."})
    blamed = make_claim(
        **{**FAILING, "id": "zhong2021-b", "cause": "paper", "ablation": "the-ablation"}
    )
    tut = make_claim(**GOOD)
    text = report_markdown([tut, song, blamed], run="commit abc, scale quick")
    assert text.startswith("These results come from the run of commit abc, scale quick.")
    assert text.index("Song & Boularias") < text.index("tutorial chapters")
    assert "* - ✗ open\n  - x | y" in text and "* - ✓\n" in text
    assert "* - ✗ the paper's\n" in text
    assert "**Does not hold** (open): Round." in text
    assert "The ablation: {ref}`the-ablation`." in text
    assert "`song2020-a`: {ref}`some-section`" in text
    assert summary_line([tut, song, blamed]) == (
        "3 claims: 1 hold, 2 do not (song2020-a, zhong2021-b): "
        "1 the paper's, 0 our set-up's, 1 open."
    )
    assert summary_line([tut]) == "1 claims: 1 hold, 0 do not."
    assert "No chapter recorded" in report_markdown([])


def test_numpy_numbers_are_formatted():
    claim = make_claim(**{**GOOD, "paper": np.float32(0.5), "ours": np.int64(3)})
    assert (claim.paper, claim.ours) == ("0.5", "3")


def test_a_verdict_is_recorded_with_its_numbers_in_one_call(capsys, monkeypatch):
    from physid.book import display
    from physid.book.claims import Verdict, record

    glued = {}
    monkeypatch.setattr(display, "glue_number", lambda name, value: glued.setdefault(name, value))
    fields = {k: v for k, v in GOOD.items() if k not in ("scale", "section")}
    fields["cause"] = "setup"  # a holding claim drops it
    verdict = Verdict(**fields, numbers={"gap_mm": 0.25})
    assert record(verdict, "quick", "some-section") is None
    assert verdict.claim("quick", "some-section") == make_claim(**GOOD)
    assert glued == {"gap_mm": 0.25}
    assert "tutorial-some-thing" in capsys.readouterr().out
    failing = Verdict(**{**fields, "holds": False, "why": "Far."})
    assert (failing.claim("quick", "s").cause, failing.claim("quick", "s").why) == ("setup", "Far.")
    record(failing, "quick", "s")
    assert "Why not (our set-up's): Far." in capsys.readouterr().out
    # A failing verdict without a reason is refused before anything is glued.
    glued.clear()
    with pytest.raises(ValueError, match="why must say"):
        record(Verdict(**{**fields, "holds": False}, numbers={"x": 1.0}), "quick", "s")
    assert glued == {}
    with pytest.raises(TypeError, match="^verdict"):
        record(make_claim(**GOOD), "quick", "some-section")
