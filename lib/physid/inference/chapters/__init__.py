"""The drivers of Part II's chapters: ``inference_synthetic`` (``book/inference_synthetic.md``) and
``inference_real_pendulum`` / ``inference_real_box`` (``book/inference_real.md``), each with its
``*_figures`` module."""
