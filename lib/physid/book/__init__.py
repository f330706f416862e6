"""The book machinery: ``python -m physid.book`` runs every chapter and builds the HTML.

* :mod:`~physid.book.runner`: execute the chapters with papermill, stage and build the book;
* :mod:`~physid.book.provenance`: which run a build's outputs belong to; files written whole;
* :mod:`~physid.book.vendor`: the pinned browser libraries the pages load from the book itself;
* :mod:`~physid.book.errors`: a chapter or a build that fails;
* :mod:`~physid.book.claims`: the claims ledger behind the reproduction report;
* :mod:`~physid.book.display`: glued numbers, figures and the explorers of the chapters;
* :mod:`~physid.book.tables`: the one table helper;
* :mod:`~physid.book.apidoc` and :mod:`~physid.book.bibstyle`: the Sphinx extensions of the
  API pages and the bibliography.
"""
