"""``python -m physid.book``: run the book (what ``make book`` calls), or only fetch the
browser libraries (``--fetch-vendor``, what ``make vendor`` calls)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from physid.book.errors import BuildError, ChapterError
from physid.book.runner import __doc__ as RUNNER_DOC
from physid.book.runner import run_book, summary
from physid.book.vendor import fetch_vendor


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m physid.book", description=RUNNER_DOC.split("\n")[0]
    )
    parser.add_argument("--scale", default="default", help="quick, default or paper")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", type=Path, default=Path("."))
    parser.add_argument(
        "--fetch-vendor",
        action="store_true",
        help="only fetch MathJax and the widget manager into book/_static/vendor, then stop",
    )
    args = parser.parse_args(argv)
    if args.fetch_vendor:
        try:
            print(fetch_vendor(args.root / "book" / "_static"))
        except BuildError as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return 0
    try:
        book = run_book(args.root, args.scale, args.seed)
    except (ChapterError, BuildError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(summary(book))
    return 0


if __name__ == "__main__":
    sys.exit(main())
