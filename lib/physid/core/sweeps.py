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
again. The key is complete by construction (:class:`Cached`): besides the function and all its
arguments it holds the code of the whole library (:func:`library_version`: an edit of any module,
whatever the function reaches through it, recomputes), the versions of the packages the results
depend on (:data:`KEY_PACKAGES`, :func:`package_versions`) and the contents of every data file
the function reads (``reads=``, :func:`data_version`). A cached function must therefore take
the rest of its configuration (sizes, seeds, the scale) as arguments.

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
import importlib
import inspect
import os
import platform
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import joblib

from physid.core.progress import progress
from physid.core.validate import check_count

__all__ = [
    "CACHE_DIR",
    "CACHE_ENV",
    "CACHE_OFF",
    "KEY_PACKAGES",
    "SCHEDULER_ENV",
    "VERSIONED_PACKAGE",
    "VERSION_DIGITS",
    "Cached",
    "cache_location",
    "cached",
    "code_version",
    "data_version",
    "library_version",
    "memory",
    "package_versions",
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

#: The package whose code (every module under it) keys every cached result.
VERSIONED_PACKAGE = "physid"

#: The packages whose installed versions key every cached result: the library's runtime
#: dependencies (``pyproject.toml``; a test keeps the two lists in step) and cvxpy, which
#: cvxpylayers brings and Part III's reference solver calls.
KEY_PACKAGES = (
    "torch",
    "numpy",
    "scipy",
    "matplotlib",
    "pybullet",
    "numba",
    "cvxpylayers",
    "cvxpy",
    "tqdm",
    "joblib",
    "pyyaml",
    "emcee",
    "pyro-ppl",
    "scikit-learn",
    "cma",
    "dask",
)


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


def package_versions() -> dict[str, str]:
    """The installed version of each package of :data:`KEY_PACKAGES` (``"absent"`` if none)
    and of Python: part of every cache key."""
    versions = {"python": platform.python_version()}
    for name in KEY_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def library_version() -> str:
    """:func:`code_version` of the whole library (the package :data:`VERSIONED_PACKAGE`): any
    edit of any of its modules changes it, so a cached result never outlives the code that
    computed it, whatever that code calls."""
    return code_version(importlib.import_module(VERSIONED_PACKAGE))


#: The content digests of data files already read, by (path, size, modification time).
_FILE_DIGESTS: dict[tuple[str, int, int], str] = {}


def _file_digest(path: Path) -> str:
    status = path.stat()
    key = (str(path.resolve()), status.st_size, status.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        _FILE_DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return _FILE_DIGESTS[key]


def data_version(paths: Iterable[str | os.PathLike]) -> str:
    """A short sha256 digest of the names and contents of the files ``paths`` (in any order);
    a folder stands for every file under it. No files (a computation that read none, such as
    a simulated stand-in for absent data) has a digest of its own."""
    files: set[Path] = set()
    for entry in paths:
        if not isinstance(entry, str | os.PathLike):
            raise TypeError(f"paths must be file or folder paths, got {entry!r}")
        path = Path(entry)
        if path.is_dir():
            files.update(f for f in path.rglob("*") if f.is_file())
        elif path.is_file():
            files.add(path)
        else:
            raise ValueError(f"paths must name existing files or folders, got {str(entry)!r}")
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.name.encode() + b"\0" + _file_digest(path).encode() + b"\0")
    return digest.hexdigest()[:VERSION_DIGITS]


def _evaluate(fn: Callable[..., Any], name: str, key: Mapping[str, Any],
              arguments: Mapping[str, Any]) -> Any:
    """``fn(**arguments)``: what the disk cache stores, keyed by all but ``fn`` (``name``
    stands for it)."""
    del name, key  # parts of the cache key only
    return fn(**arguments)


class Cached:
    """A function whose results the disk cache keeps (made by :func:`cached`).

    A call ``f(*args, **kwargs)`` is looked up by :meth:`key`: the function's qualified name,
    every argument (bound to the signature, defaults filled in), :func:`library_version`,
    :func:`package_versions` and :func:`data_version` of the files ``reads(*args, **kwargs)``
    names. Whatever else the result depends on must be one of these.
    """

    def __init__(self, fn: Callable[..., Any], reads: Callable[..., Iterable[Any]] | None):
        self.fn = fn
        self.reads = reads
        self.signature = inspect.signature(fn)
        self.name = f"{fn.__module__}.{fn.__qualname__}"
        functools.update_wrapper(self, fn)

    def __reduce__(self) -> str | tuple[Any, ...]:
        # A decorated module-level function travels to worker processes by name (as a plain
        # one does); one made by cached(f) under another name, as its function and reads.
        module = sys.modules.get(self.fn.__module__)
        if getattr(module, self.fn.__qualname__, None) is self:
            return self.fn.__qualname__
        return (Cached, (self.fn, self.reads))

    def arguments(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The call's arguments by name, defaults filled in (a TypeError if they do not bind)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def key(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Everything a call's cached result is looked up by, besides its arguments."""
        reads = () if self.reads is None else self.reads(*args, **kwargs)
        return {
            "code": library_version(),
            "packages": package_versions(),
            "data": data_version(reads),
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        arguments = self.arguments(*args, **kwargs)
        if cache_location() is None:  # the cache is off: no key to compute
            return self.fn(**arguments)
        cache = memory().cache(_evaluate, ignore=["fn"])
        return cache(self.fn, self.name, self.key(*args, **kwargs), arguments)


def cached(
    fn: Callable[..., Any] | None = None, *, reads: Callable[..., Iterable[Any]] | None = None
) -> Any:
    """``fn`` with its results kept in the disk cache, keyed completely (:class:`Cached`).

    Use it as a decorator, ``@cached`` or ``@cached(reads=files)``, on a module-level
    function whose result depends only on its arguments, the library's code, the packages of
    :data:`KEY_PACKAGES` and the data files it reads: ``reads`` takes the function's
    arguments and returns the paths of those files (or folders), whose contents then key the
    result too. Arguments must be plain data and numpy arrays: joblib hashes a torch tensor
    differently on every call, so a tensor argument would never hit the cache. The cache's
    location (and whether it is on) is read at each call, from ``PHYSID_CACHE``.
    """
    if reads is not None and not callable(reads):
        raise TypeError(f"reads must be callable, got {type(reads).__name__}")
    if fn is None:
        return lambda function: cached(function, reads=reads)
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    return Cached(fn, reads)


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
