"""Sphinx helpers for the API reference pages (``book/api_*.md``).

Two additions to autodoc, loaded from ``_config.yml`` (``extra_extensions``):

- the directive ``physid-module`` (used inside ``{eval-rst}``, under the module's heading)
  documents one module: a summary table of its public names with the first sentence of each
  docstring (generated from the module, so it follows the code), then ``automodule`` with its
  members;
- constants whose value would print as a long blob (a ``SIZES`` table of dataclasses) are
  shown without their value; their doc comment says what they hold.

The library's docstrings are prose. napoleon would read the text before the first colon of a
``#:`` doc comment ("The end-effector speed of §6, m/s: the default ...") as the constant's
type, and reStructuredText would read ``|x|`` (an absolute value) as a substitution: the
docstring hooks below keep both as written.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.ext.autodoc import DataDocumenter
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docutils import SphinxDirective
from sphinx.util.inspect import object_description

#: A constant's value is printed only when its text is at most this long.
MAX_VALUE_CHARS = 60

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
#: Words whose full stop does not end a sentence ("by eq. ``tut-loss``", "Fig. 3", "e.g. the").
ABBREVIATIONS = frozenset(
    {"eq.", "eqs.", "fig.", "figs.", "e.g.", "i.e.", "cf.", "vs.", "al.", "sec.", "no.", "approx."}
)


def _up_to_first_end(paragraph: str) -> str:
    """``paragraph`` up to the first full stop (or ! or ?) that ends a sentence."""
    for end in _SENTENCE_END.finditer(paragraph):
        word = paragraph[: end.start()].rsplit(None, 1)[-1].lstrip("(").lower()
        if word not in ABBREVIATIONS:
            return paragraph[: end.start()]
    return paragraph


def first_sentence(text: str) -> str:
    """The first sentence of the first paragraph, with cross-reference roles as literals; a full
    stop after one of :data:`ABBREVIATIONS` does not end it."""
    paragraph = " ".join(text.split("\n\n", 1)[0].split())
    paragraph = _ROLE.sub(lambda m: f"``{m.group(1).strip()}``", paragraph)
    sentence = _up_to_first_end(paragraph)
    # A full stop inside a literal ("``e.g. x``") is not the end of the sentence.
    balanced = sentence.count("``") % 2 == 0 and sentence.replace("``", "").count("`") % 2 == 0
    return sentence if balanced else paragraph


def summary_line(obj: Any) -> str:
    """The first sentence of ``obj``'s docstring (see :func:`first_sentence`)."""
    return first_sentence(inspect.getdoc(obj) or "")


def _data_summary(module_name: str, name: str) -> str:
    analyzer = ModuleAnalyzer.for_module(module_name)
    analyzer.analyze()
    return first_sentence("\n".join(analyzer.attr_docs.get(("", name), [])))


def public_names(module_name: str) -> list[str]:
    """The names autodoc documents for the module, in source order.

    Functions and classes defined in the module with a docstring, and module-level constants
    with a ``#:`` doc comment; ``__all__`` restricts them when the module defines it.
    """
    module = importlib.import_module(module_name)
    analyzer = ModuleAnalyzer.for_module(module_name)
    analyzer.analyze()
    documented_data = {name for (scope, name) in analyzer.attr_docs if scope == ""}
    allowed = set(getattr(module, "__all__", vars(module)))
    order = analyzer.tagorder
    names = []
    for name, value in vars(module).items():
        if name.startswith("_") or name not in allowed:
            continue
        defined_here = getattr(value, "__module__", None) == module_name
        if (inspect.isfunction(value) or inspect.isclass(value)) and defined_here:
            if inspect.getdoc(value):
                names.append(name)
        elif name in documented_data:
            names.append(name)
    return sorted(names, key=lambda n: order.get(n, len(order)))


class ModuleDirective(SphinxDirective):
    """``.. physid-module:: physid.pushing.lcp``: summary table, then the members."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        module = importlib.import_module(name)
        lines = []
        names = public_names(name)
        if names:
            lines += [".. list-table::", "   :widths: 30 70", "   :class: physid-summary", ""]
            for member in names:
                value = getattr(module, member)
                if inspect.isfunction(value) or inspect.isclass(value):
                    summary = summary_line(value)
                else:
                    summary = _data_summary(name, member)
                summary_lines = [summary]
                escape_absolute_values(None, "", "", None, None, summary_lines)
                lines += [f"   * - :py:obj:`~{name}.{member}`", f"     - {summary_lines[0] or ' '}"]
            lines.append("")
        lines += [f".. automodule:: {name}", "   :members:", ""]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=f"<physid-module {name}>"), 0, container)
        return container.children


class ShortDataDocumenter(DataDocumenter):
    """Module data, with the value left out when it would be longer than a line."""

    priority = DataDocumenter.priority + 1

    def add_directive_header(self, sig: str) -> None:
        try:
            text = object_description(self.object)
        except ValueError:
            text = ""
        if not text or len(text) > MAX_VALUE_CHARS:
            self.options["no-value"] = True
        super().add_directive_header(sig)


_LITERAL = re.compile(r"(``.*?``|:[a-z:]+:`[^`]*`|`[^`]*`)")
_BARS = re.compile(r"(?<![\\|])\|(?=\S)([^|`]+?)(?<=\S)\|(?!\|)")


def escape_absolute_values(
    app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]
) -> None:
    """Escape ``|x|`` outside literals and roles, so that it reads as an absolute value."""
    for i, line in enumerate(lines):
        if "|" not in line or line.lstrip().startswith(("|", "+")):
            continue
        parts = _LITERAL.split(line)
        parts[::2] = [_BARS.sub(r"\\|\1\\|", part) for part in parts[::2]]
        lines[i] = "".join(parts)


class _ProseDataDocs:
    """Keep a constant's or attribute's doc comment as written, past napoleon.

    One handler runs before napoleon and remembers the lines; one runs after it and puts them
    back.
    """

    def __init__(self) -> None:
        self.saved: dict[str, list[str]] = {}

    def remember(self, app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]):
        if what in ("data", "attribute"):
            self.saved[name] = list(lines)

    def restore(self, app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]):
        if what in ("data", "attribute") and name in self.saved:
            lines[:] = self.saved.pop(name)


def setup(app: Any) -> dict[str, Any]:
    """Register the directive, the documenter and the docstring hook (Sphinx entry point)."""
    app.setup_extension("sphinx.ext.autodoc")
    app.add_directive("physid-module", ModuleDirective)
    app.add_autodocumenter(ShortDataDocumenter, override=True)
    # napoleon's own handler runs at the default priority, 500, and rewrites the lines in place.
    prose = _ProseDataDocs()
    app.connect("autodoc-process-docstring", prose.remember, priority=400)
    app.connect("autodoc-process-docstring", prose.restore, priority=600)
    app.connect("autodoc-process-docstring", escape_absolute_values, priority=700)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
