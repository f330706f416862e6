"""Reproduced claims: what a paper states, what we measured, and whether it holds.

A claim's criterion is a tested function of the chapter's driver that takes the chapter's
results and returns a :class:`Verdict` (the claim's text, values, verdict, the reason when it
does not hold, and the numbers the prose around it glues); the chapter records it with
:func:`record`, which glues those numbers and records the claim in one call. A chapter may also
call :func:`record_claim` directly, once per claim it checks. The claim is displayed in
the chapter as a short Markdown line, and carried in that output's metadata under the key
:data:`CLAIM_KEY`. The book runner (:mod:`physid.book.runner`) collects these from every executed
chapter into ``_build/reproduction/claims.json``, and :func:`report_markdown` renders them as
the tables of the "Reproduction report" page.

A claim that does not hold says whose failure it is, one of :data:`CAUSES`: ``"paper"`` (an
ablation in the book, the section ``ablation``, shows that the paper's method, model or set-up
is responsible), ``"setup"`` (a choice of this book, a defect to fix: its ``why`` says what
would fix it) or ``"open"`` (the two are not yet separated). The report shows the cause beside
the verdict and counts each class.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from physid.book.provenance import write_text_atomic
from physid.core.scales import check_scale

#: Output-metadata key under which an executed notebook carries a claim.
CLAIM_KEY = "physid_claim"

#: Claim-id prefixes and the source each one stands for, in report order.
PAPERS: dict[str, str] = {
    "song2020": "Song & Boularias (2020): identifying mechanical models by pushing",
    "heiden2022": "Heiden et al. (2022): probabilistic inference of simulation parameters",
    "zhong2021": "Zhong et al. (2021): Lagrangian and Hamiltonian networks with contact",
    "tutorial": "The book's own tutorial chapters",
    "physid": "The book's own findings beyond the papers",
}

#: Whose failure a claim that does not hold is, and how the report names each.
CAUSES: dict[str, str] = {
    "paper": "the paper's",
    "setup": "our set-up's",
    "open": "open",
}

_ID_PATTERN = re.compile(
    r"^(song2020|heiden2022|zhong2021|tutorial|physid)-[a-z0-9.]+(-[a-z0-9.]+)*$")
_LABEL_PATTERN = re.compile(r"^[a-z0-9]+([-_][a-z0-9]+)*$")


@dataclass(frozen=True)
class Claim:
    """One reproduced claim; ``chapter`` is filled in by the book runner."""

    id: str
    statement: str
    paper: str
    ours: str
    criterion: str
    holds: bool
    scale: str
    section: str
    why: str = field(default="")
    cause: str = field(default="")
    ablation: str = field(default="")
    chapter: str = field(default="")

    @property
    def source(self) -> str:
        """Prefix of the id, naming the paper (or ``tutorial``) the claim belongs to."""
        return self.id.split("-", 1)[0]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _as_text(value: object, name: str) -> str:
    if isinstance(value, bool | np.bool_):
        raise ValueError(f"{name} must be a number or a string, got the bool {value!r}")
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"{name} must be finite, got {value!r}")
        return f"{number:.4g}"
    if isinstance(value, str) and value.strip():
        return value
    raise ValueError(f"{name} must be a number or a non-empty string, got {value!r}")


def make_claim(
    id: str,
    statement: str,
    paper: object,
    ours: object,
    criterion: str,
    holds: bool,
    scale: str,
    section: str,
    why: str = "",
    cause: str = "",
    ablation: str = "",
) -> Claim:
    """Validate the fields of a claim and return it.

    Args:
        id: ``<paper>-<words>``, e.g. ``song2020-rigid-matches-lcp``; the prefix is one of
            :data:`PAPERS`.
        statement: the claim in one sentence, as the paper (or the chapter) makes it.
        paper: the paper's value (a number or text, e.g. ``"< 1.5 cm"``).
        ours: our measured value.
        criterion: how ``holds`` was decided, e.g. ``"|mu - mu*| / mu* <= 1 %"``.
        holds: whether our value meets the criterion.
        scale: the scale the chapter ran at.
        section: the MyST label (``(label)=``) of the chapter section that checks the claim;
            the report links to it.
        why: for a claim that does not hold, one sentence saying why (required then, and
            refused for a claim that holds).
        cause: for a claim that does not hold, whose failure it is, a key of :data:`CAUSES`
            (required then, and refused for a claim that holds).
        ablation: for the cause ``"paper"``, the MyST label of the section whose ablation
            shows it (required then, and refused otherwise).
    """
    if not isinstance(id, str) or not _ID_PATTERN.match(id):
        raise ValueError(
            f"id must look like '<paper>-<words>' with <paper> one of {', '.join(PAPERS)} "
            f"and lower-case words joined by '-', got {id!r}"
        )
    for name, text in (("statement", statement), ("criterion", criterion)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-empty string, got {text!r}")
    if isinstance(holds, np.bool_):
        holds = bool(holds)
    if not isinstance(holds, bool):
        raise ValueError(f"holds must be True or False, got {holds!r}")
    if not isinstance(section, str) or not _LABEL_PATTERN.match(section):
        raise ValueError(
            "section must be the MyST label of the section that checks the claim "
            f"(lower-case words joined by '-' or '_'), got {section!r}"
        )
    if not isinstance(why, str):
        raise ValueError(f"why must be a string, got {why!r}")
    if not holds and not why.strip():
        raise ValueError(
            f"claim {id!r} does not hold, so why must say in one sentence why it does not"
        )
    if holds and why.strip():
        raise ValueError(f"claim {id!r} holds, so it takes no why; got {why!r}")
    if holds and (cause or ablation):
        raise ValueError(
            f"claim {id!r} holds, so it takes no cause or ablation; got {cause!r}, {ablation!r}"
        )
    if not holds and cause not in CAUSES:
        raise ValueError(
            f"claim {id!r} does not hold, so cause must say whose failure it is, one of "
            f"{tuple(CAUSES)}; got {cause!r}"
        )
    if cause == "paper" and not (isinstance(ablation, str) and _LABEL_PATTERN.match(ablation)):
        raise ValueError(
            f"claim {id!r} blames the paper, so ablation must be the MyST label of the section "
            f"whose ablation shows it; got {ablation!r}"
        )
    if cause in ("setup", "open") and ablation:
        raise ValueError(
            f"claim {id!r}: an ablation names the section that shows the paper's failure; "
            f"the cause {cause!r} takes none, got {ablation!r}"
        )
    return Claim(
        id=id,
        statement=statement.strip(),
        paper=_as_text(paper, "paper"),
        ours=_as_text(ours, "ours"),
        criterion=criterion.strip(),
        holds=holds,
        scale=check_scale(scale),
        section=section,
        why=" ".join(why.split()),
        cause=cause,
        ablation=ablation,
    )


def record_claim(*args: Any, **fields: Any) -> None:
    """Record a reproduced claim and show it in the chapter; the fields are those of
    :func:`make_claim` (validated there). Like every call a chapter makes for its effect, it
    returns None, so a hidden cell that ends with it leaves no value on the page."""
    show_claim(make_claim(*args, **fields))


def show_claim(claim: Claim) -> None:
    """Show ``claim`` in the chapter as a short Markdown line that carries it in its metadata
    (under :data:`CLAIM_KEY`, where the book runner collects it)."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim, got {type(claim).__name__}")
    from IPython.display import display

    verdict = "holds" if claim.holds else "does not hold"
    markdown = (
        f"**Claim `{claim.id}`** ({verdict}): {claim.statement} "
        f"Paper: {claim.paper}; ours: {claim.ours}; criterion: {claim.criterion}."
    )
    if claim.why:
        markdown += f" Why not ({CAUSES[claim.cause]}): {claim.why}"
    display(
        {"text/markdown": markdown, "text/plain": markdown},
        metadata={CLAIM_KEY: claim.as_dict()},
        raw=True,
    )


@dataclass(frozen=True)
class Verdict:
    """A claim as a chapter's driver judges it: every field of :func:`make_claim` but the
    scale and the section, which the chapter gives, and ``numbers``: name → value of what the
    chapter's prose glues about it (:func:`physid.book.display.glue_number`).

    ``cause`` (and ``ablation``) say whose failure it would be if the claim does not hold, and
    are stated for every claim; they reach the :class:`Claim` only when it does not hold.
    """

    id: str
    statement: str
    paper: object
    ours: object
    criterion: str
    holds: bool
    cause: str
    why: str = ""
    ablation: str = ""
    numbers: dict[str, float] = field(default_factory=dict)

    def claim(self, scale: str, section: str) -> Claim:
        """The validated :class:`Claim` at ``scale``, checked in the section ``section``."""
        holds = bool(self.holds)
        cause, ablation = ("", "") if holds else (self.cause, self.ablation)
        return make_claim(
            self.id, self.statement, self.paper, self.ours, self.criterion, holds, scale,
            section, self.why, cause, ablation,
        )


def record(verdict: Verdict, scale: str, section: str) -> None:
    """Glue ``verdict.numbers`` and show its claim (:func:`show_claim`) in one call (None
    returned: a hidden cell that ends with it leaves no value on the page)."""
    from physid.book.display import glue_number

    if not isinstance(verdict, Verdict):
        raise TypeError(f"verdict must be a Verdict, got {type(verdict).__name__}")
    claim = verdict.claim(scale, section)  # validated before anything is glued
    for name, value in verdict.numbers.items():
        glue_number(name, value)
    show_claim(claim)


def claims_from_notebook(nb: Any, chapter: str) -> list[Claim]:
    """The claims an executed notebook recorded, tagged with ``chapter``."""
    claims = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            metadata = output.get("metadata", {})
            if CLAIM_KEY in metadata:
                fields = dict(metadata[CLAIM_KEY])
                fields["chapter"] = chapter
                claims.append(Claim(**fields))
    return claims


def check_unique(claims: Iterable[Claim]) -> None:
    """Raise a ValueError if two claims share an id (naming both chapters)."""
    seen: dict[str, str] = {}
    for claim in claims:
        if claim.id in seen:
            raise ValueError(
                f"claim id {claim.id!r} is recorded twice: in {seen[claim.id]!r} "
                f"and in {claim.chapter!r}"
            )
        seen[claim.id] = claim.chapter


def write_claims(claims: Sequence[Claim], path: Path) -> Path:
    """Write ``claims`` as a JSON list to ``path`` (creating its folder), whole or not at all
    (:func:`~physid.book.provenance.write_text_atomic`)."""
    check_unique(claims)
    text = json.dumps([c.as_dict() for c in claims], indent=2, ensure_ascii=False)
    return write_text_atomic(Path(path), text)


def load_claims(path: Path) -> list[Claim]:
    """Read a ``claims.json`` written by :func:`write_claims`."""
    return [Claim(**fields) for fields in json.loads(Path(path).read_text())]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def report_markdown(claims: Sequence[Claim], run: str | None = None) -> str:
    """The claims as MyST Markdown: one table per paper, the verdict (✓ / ✗) first.

    Each claim links to the section that checks it; a claim that does not hold shows its
    ``why`` under the statement. ``run`` (a
    :meth:`~physid.book.provenance.RunRecord.identity` phrase) says which run of the book the
    claims come from.
    """
    head = [] if run is None else [f"These results come from the run of {run}.", ""]
    if not claims:
        return "\n".join([*head, "No chapter recorded a claim in this run.", ""])
    lines = [*head, summary_line(claims), ""]
    for source, title in PAPERS.items():
        group = [c for c in claims if c.source == source]
        if not group:
            continue
        lines += [
            f"## {title}",
            "",
            "```{list-table}",
            ":header-rows: 1",
            ":widths: 4 40 16 18 22",
            ":class: physid-claims",
            "",
        ]
        lines += ["* - ", "  - claim", "  - paper", "  - ours", "  - criterion (scale)"]
        for c in group:
            verdict = "✓" if c.holds else f"✗ {CAUSES[c.cause]}"
            lines += [
                f"* - {verdict}",
                f"  - {_one_line(c.statement)}",
                "",
                f"    `{c.id}`: {{ref}}`{c.section}`",
            ]
            if c.why:
                lines += ["", f"    **Does not hold** ({CAUSES[c.cause]}): {_one_line(c.why)}"]
            if c.ablation:
                lines += ["", f"    The ablation: {{ref}}`{c.ablation}`."]
            lines += [
                f"  - {_one_line(c.paper)}",
                f"  - {_one_line(c.ours)}",
                f"  - {_one_line(c.criterion)} ({c.scale})",
            ]
        lines += ["```", ""]
    return "\n".join(lines)


def cause_counts(claims: Sequence[Claim]) -> dict[str, int]:
    """How many claims that do not hold have each cause of :data:`CAUSES`."""
    return {cause: sum(not c.holds and c.cause == cause for c in claims) for cause in CAUSES}


def summary_line(claims: Sequence[Claim]) -> str:
    """``"N claims: H hold, F do not (ids): P the paper's, S our set-up's, O open."``, for the
    report and the terminal."""
    failing = [c.id for c in claims if not c.holds]
    text = f"{len(claims)} claims: {len(claims) - len(failing)} hold, {len(failing)} do not"
    if not failing:
        return text + "."
    counts = ", ".join(f"{n} {CAUSES[cause]}" for cause, n in cause_counts(claims).items())
    return text + f" ({', '.join(failing)}): {counts}."
