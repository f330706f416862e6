"""The drivers of Part I's chapters: ``pushing_lcp`` (``book/pushing_lcp.md``) and
``pushing_identify`` (``book/pushing_identify.md``), each with its ``*_figures`` module."""
