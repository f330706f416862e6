"""Independent jobs, run here or on a Dask cluster, and a disk cache for their results.

Part I's identification sweeps (and Part III's training runs) are many independent calls of
one function with different keyword arguments. :func:`run_jobs` runs them through
``joblib.Parallel``: on this machine by default (``n_jobs`` processes of joblib's loky backend;
``n_jobs=1`` runs them one after the other in this process), or on a Dask cluster when a
scheduler is named. The results come back in the order of the jobs, and they are the same
wherever the jobs ran, provided each job is a deterministic function of its arguments: it
seeds its own generators from an argument, and reads no global state (no unseeded random
numbers, no clock, no file that another job writes).

**Running a sweep on a Dask cluster.** Start a scheduler, and workers on each machine (from
the same environment, with this repository installed), then name the scheduler in the
environment variable ``PHYSID_DASK_SCHEDULER``::

    .venv/bin/dask scheduler                              # prints tcp://host:8786
    .venv/bin/dask worker tcp://host:8786 --nthreads 1 --nworkers 4   # on each machine
    PHYSID_DASK_SCHEDULER=tcp://host:8786 make book

Every :func:`run_jobs` call of the book then sends its jobs to the cluster (through
``joblib.parallel_config(backend="dask")``) and spreads them over all the workers. A chapter
can also pass ``scheduler=`` itself: an address, or a ``dask.distributed.Client`` it made.

**The disk cache.** :func:`cached` wraps a function in a ``joblib.Memory``, which stores each
result on disk and returns it on a later call with the same arguments instead of computing it
again. joblib keys a call by the function (its module and name) and a hash of *all* its
arguments, and it forgets a function's results when the function's own source changes; it does
not see changes in the code the function calls, nor in anything the function reads that is not
an argument. A cached function must therefore take its whole configuration (sizes, seeds, the
scale) as arguments, and a caller that wants any change of a library package to invalidate its
results passes ``code_version(package)`` (see :func:`code_version`) as one more argument.

The cache lives where the environment variable ``PHYSID_CACHE`` says, else in ``_build/cache``
under the current folder; ``PHYSID_CACHE=off`` (or ``0``, ``none``) turns caching off. ``make
clean`` removes ``_build`` and the cache with it; so does deleting the folder. The location
is read by the process that makes the call, from its own environment and current folder: loky
worker processes have the environment they started with, and each Dask worker caches on its
own machine unless ``PHYSID_CACHE`` names a folder they share.
"""

from __future__ import annotations

import functools
import hashlib
import os
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import joblib

from physid.core.progress import progress
from physid.core.validate import check_count

__all__ = [
    "CACHE_DIR",
    "CACHE_ENV",
    "CACHE_OFF",
    "SCHEDULER_ENV",
    "VERSION_DIGITS",
    "cache_location",
    "cached",
    "code_version",
    "memory",
    "run_jobs",
    "scheduler_from_env",
]

#: The environment variable that names a Dask scheduler (``tcp://host:8786``) for every sweep.
SCHEDULER_ENV = "PHYSID_DASK_SCHEDULER"

#: The environment variable that moves the disk cache (a folder) or turns it off (``off``).
CACHE_ENV = "PHYSID_CACHE"

#: Where the disk cache lives when ``PHYSID_CACHE`` is not set, relative to the current folder.
CACHE_DIR = Path("_build") / "cache"

#: The values of ``PHYSID_CACHE`` (in any case) that turn the disk cache off.
CACHE_OFF = ("off", "0", "none")

#: The length of a :func:`code_version` digest, in hexadecimal digits.
VERSION_DIGITS = 16


def scheduler_from_env() -> str | None:
    """The Dask scheduler address in ``PHYSID_DASK_SCHEDULER``; ``None`` if unset or empty."""
    address = os.environ.get(SCHEDULER_ENV, "").strip()
    return address or None


def _check_jobs(jobs: Any) -> list[Mapping[str, Any]]:
    if isinstance(jobs, str | bytes | Mapping) or not isinstance(jobs, Sequence):
        raise TypeError(f"jobs must be a sequence of keyword dicts, got {type(jobs).__name__}")
    for index, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            raise TypeError(
                f"jobs must be a sequence of keyword dicts; jobs[{index}] is {job!r}"
            )
        for key in job:
            if not isinstance(key, str):
                raise TypeError(f"jobs[{index}] has a keyword that is not a string: {key!r}")
    return list(jobs)


def _check_n_jobs(n_jobs: Any) -> int:
    try:
        count = check_count("n_jobs", n_jobs, minimum=-1)
    except ValueError:
        count = 0
    if count == 0:
        raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
    return count


def _check_scheduler(scheduler: Any) -> Any:
    if scheduler is None:
        return None
    if isinstance(scheduler, str):
        if not scheduler.strip():
            raise ValueError("scheduler must be a Dask scheduler address, got an empty string")
        return scheduler.strip()
    from distributed import Client

    if not isinstance(scheduler, Client):
        raise TypeError(
            "scheduler must be None, an address string or a dask.distributed.Client, "
            f"got {type(scheduler).__name__}"
        )
    return scheduler


def _collect(parallel: joblib.Parallel, calls: list[Any], desc: str | None) -> list[Any]:
    if desc is None:
        return list(parallel(calls))
    bar = progress(desc=desc, total=len(calls))
    try:
        results = []
        for result in parallel(calls):
            results.append(result)
            bar.update()
        return results
    finally:
        bar.close()


def run_jobs(
    fn: Callable[..., Any],
    jobs: Sequence[Mapping[str, Any]],
    n_jobs: int = 1,
    scheduler: Any = None,
    desc: str | None = None,
) -> list[Any]:
    """``fn(**job)`` for each job of ``jobs``, here or on a Dask cluster; results in job order.

    Without a scheduler the jobs run through ``joblib.Parallel(n_jobs=n_jobs)``: loky worker
    processes, or this process one job after another when ``n_jobs=1``; ``-1`` is every core.

    The jobs run on a Dask cluster when ``scheduler`` names one (an address such as
    ``"tcp://127.0.0.1:8786"``, or a connected ``dask.distributed.Client``) or, when it is
    ``None``, when the environment variable ``PHYSID_DASK_SCHEDULER`` does. They are then spread
    over all the cluster's workers (``n_jobs`` is checked but not used). A client made here
    from an address is closed afterwards; a client passed in is left open.

    The results are the same wherever the jobs run only if ``fn`` is a deterministic function
    of its arguments (its seeds among them) and, for processes and clusters, importable (or
    picklable) there. ``desc`` draws a progress bar on the terminal (none by default).
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    calls = _check_jobs(jobs)
    n_jobs = _check_n_jobs(n_jobs)
    scheduler = _check_scheduler(scheduler)
    if desc is not None and not isinstance(desc, str):
        raise TypeError(f"desc must be None or a string, got {type(desc).__name__}")
    if scheduler is None:
        scheduler = scheduler_from_env()
    if not calls:
        return []
    delayed = [joblib.delayed(fn)(**job) for job in calls]
    if scheduler is None:
        return _collect(joblib.Parallel(n_jobs=n_jobs, return_as="generator"), delayed, desc)

    from distributed import Client

    own_client = not isinstance(scheduler, Client)
    client = Client(scheduler, set_as_default=False) if own_client else scheduler
    try:
        with joblib.parallel_config(backend="dask", client=client):
            parallel = joblib.Parallel(n_jobs=-1, return_as="generator")
            return _collect(parallel, delayed, desc)
    finally:
        if own_client:
            client.close()


def cache_location() -> Path | None:
    """The folder of the disk cache: ``PHYSID_CACHE``, else ``_build/cache``; ``None`` if off.

    A relative path is taken from the current folder, at the time of the call.
    """
    setting = os.environ.get(CACHE_ENV, "").strip()
    if setting.lower() in CACHE_OFF:
        return None
    return Path(setting or CACHE_DIR).absolute()


def memory() -> joblib.Memory:
    """The ``joblib.Memory`` of the disk cache (at :func:`cache_location`), quiet.

    With the cache off it is a ``joblib.Memory`` without a location, which caches nothing.
    """
    location = cache_location()
    return joblib.Memory(location=None if location is None else str(location), verbose=0)


def cached(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with its results kept in the disk cache, keyed by ``fn`` and all its arguments.

    Use it as a decorator on a module-level function whose result depends only on its
    arguments, given as plain data and numpy arrays: joblib hashes a torch tensor differently
    on every call, so a tensor argument would never hit the cache. The cache's location (and
    whether it is on) is read at each call, from ``PHYSID_CACHE``. The wrapped function keeps
    ``fn``'s name and docstring.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return memory().cache(fn)(*args, **kwargs)

    return call


def _sources(module: types.ModuleType) -> list[tuple[str, bytes]]:
    """(name, source) of a module, or of every Python file under a package, sorted by name."""
    if not isinstance(module, types.ModuleType):
        raise TypeError(f"modules must be module objects, got {module!r}")
    paths = getattr(module, "__path__", None)
    if paths is not None:
        files = sorted({f for folder in paths for f in Path(folder).rglob("*.py")})
        name = module.__name__
        return [(f"{name}:{_relative(f, paths)}", f.read_bytes()) for f in files]
    origin = getattr(module, "__file__", None)
    if not origin or not origin.endswith(".py"):
        raise ValueError(f"module {module.__name__} has no Python source file")
    return [(module.__name__, Path(origin).read_bytes())]


def _relative(path: Path, folders: Sequence[str]) -> str:
    for folder in folders:
        if path.is_relative_to(folder):
            return path.relative_to(folder).as_posix()
    return path.as_posix()


def code_version(*modules: types.ModuleType) -> str:
    """A short sha256 digest of the source of ``modules``: it changes when any of them does.

    A package stands for every Python file under it, so ``code_version(physid.pushing)``
    changes with any change of the pushing code. Pass the digest to a :func:`cached` function
    as an argument, and a code change recomputes its results.
    """
    if not modules:
        raise ValueError("code_version needs at least one module")
    digest = hashlib.sha256()
    for module in modules:
        for name, source in _sources(module):
            digest.update(name.encode() + b"\0" + source + b"\0")
    return digest.hexdigest()[:VERSION_DIGITS]
