"""The drivers of the tutorial chapter (``book/tutorial_sliding_box.md``)."""
