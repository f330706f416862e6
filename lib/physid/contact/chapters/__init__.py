"""The drivers of Part III's chapters: ``contact_model`` (``book/contact_model.md``) and
``contact_learning`` (``book/contact_learning.md``), each with its ``*_figures`` module."""
