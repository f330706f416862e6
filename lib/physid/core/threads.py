"""torch's thread count, changed only inside a block and always restored.

The book's experiments solve many small batched problems, which run faster on one torch thread
than on several (the thread pool costs more than it gains), and a joblib sweep gives each job
its own core. Library code never changes the caller's setting for good: it uses
:func:`one_torch_thread` around the work.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """torch on one thread inside the block; the caller's thread count is restored after it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
