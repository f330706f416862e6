"""physid.core.sweeps: jobs here and on a Dask cluster, the disk cache, code versions."""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import physid
from physid.core import sweeps
from physid.core.sweeps import (
    CACHE_ENV,
    KEY_PACKAGES,
    SCHEDULER_ENV,
    Cached,
    cache_location,
    cached,
    code_version,
    data_version,
    memory,
    run_jobs,
    scheduler_from_env,
)


def job(seed, size=3, scale=1.0):
    """A small seeded computation: the same arguments give the same bits anywhere."""
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(size, size, generator=generator, dtype=torch.float64)
    b = np.random.default_rng(seed).standard_normal(size)
    return scale * (torch.linalg.solve(a @ a.T + torch.eye(size, dtype=torch.float64),
                                       torch.from_numpy(b))).numpy()


JOBS = [{"seed": seed, "size": 2 + seed % 3, "scale": 0.5 * seed} for seed in range(6)]


def same(results, expected):
    assert len(results) == len(expected)
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def expected():
    return [job(**kwargs) for kwargs in JOBS]


@pytest.fixture(autouse=True)
def no_scheduler(monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dashboard port may be taken
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        )
    yield cluster
    cluster.close()


def test_results_in_job_order_in_this_process(expected):
    same(run_jobs(job, JOBS), expected)


def test_results_in_job_order_in_two_processes(expected):
    same(run_jobs(job, JOBS, n_jobs=np.int64(2)), expected)


def test_no_jobs_give_no_results():
    assert run_jobs(job, []) == []
    assert run_jobs(job, (), scheduler="tcp://127.0.0.1:1") == []


def test_a_progress_bar_changes_nothing(expected):
    same(run_jobs(job, JOBS, desc="jobs"), expected)


def test_dask_by_address_gives_the_same_numbers(cluster, expected):
    same(run_jobs(job, JOBS, scheduler=cluster.scheduler_address), expected)


def test_dask_by_client_leaves_the_client_open(cluster, expected):
    from distributed import Client

    with Client(cluster) as client:
        same(run_jobs(job, JOBS, scheduler=client, desc="jobs"), expected)
        assert client.status == "running"
        assert client.submit(sum, [1, 2]).result() == 3


def test_dask_by_environment_variable(cluster, expected, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
    assert scheduler_from_env() == cluster.scheduler_address
    same(run_jobs(job, JOBS), expected)


def test_scheduler_from_env_empty_is_none(monkeypatch):
    assert scheduler_from_env() is None
    monkeypatch.setenv(SCHEDULER_ENV, "")
    assert scheduler_from_env() is None


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"fn": 3}, TypeError, "fn"),
        ({"jobs": {"seed": 1}}, TypeError, "jobs"),
        ({"jobs": "seed"}, TypeError, "jobs"),
        ({"jobs": (s for s in JOBS)}, TypeError, "jobs"),
        ({"jobs": [{"seed": 1}, 2]}, TypeError, "jobs"),
        ({"jobs": [{1: 1}]}, TypeError, "jobs"),
        ({"n_jobs": 0}, ValueError, "n_jobs"),
        ({"n_jobs": -2}, ValueError, "n_jobs"),
        ({"n_jobs": 2.0}, TypeError, "n_jobs"),
        ({"n_jobs": True}, TypeError, "n_jobs"),
        ({"scheduler": 8786}, TypeError, "scheduler"),
        ({"scheduler": " "}, ValueError, "scheduler"),
        ({"desc": 1}, TypeError, "desc"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(kwargs, error, name):
    calls = []
    arguments = {"fn": lambda **job: calls.append(job), "jobs": [{"seed": 1}], **kwargs}
    with pytest.raises(error, match=name):
        run_jobs(**arguments)
    assert calls == []


def test_bad_n_jobs_message_gives_the_value():
    with pytest.raises(ValueError, match="n_jobs.*-2"):
        run_jobs(job, JOBS, n_jobs=-2)


# -- the disk cache ------------------------------------------------------------------------


def counted(log, x, y=1):
    """A cached function: each computation appends a line to ``log``."""
    with open(log, "a") as file:
        file.write(f"{x} {y}\n")
    return np.arange(x) * y


counted_cached = cached(counted)


def computations(log):
    return log.read_text().splitlines() if log.exists() else []


def test_cache_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert cache_location() == tmp_path / "_build" / "cache"
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "elsewhere"))
    assert cache_location() == tmp_path / "elsewhere"
    assert memory().location == str(tmp_path / "elsewhere")
    for off in ("off", "OFF", "0", "none"):
        monkeypatch.setenv(CACHE_ENV, off)
        assert cache_location() is None
        assert memory().location is None


def test_a_cached_call_computes_once(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    log = tmp_path / "log.txt"
    first = counted_cached(log, 4, y=2)
    second = counted_cached(log, 4, y=2)
    np.testing.assert_array_equal(first, second)
    assert computations(log) == ["4 2"]
    counted_cached(log, 4, y=3)
    assert computations(log) == ["4 2", "4 3"]
    assert counted_cached.__name__ == "counted"
    assert any((tmp_path / "cache").rglob("output.pkl"))


def test_cached_jobs_compute_once_across_processes(tmp_path, monkeypatch):
    from joblib.externals.loky import get_reusable_executor

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    # Worker processes read PHYSID_CACHE from the environment they started with: start anew.
    get_reusable_executor().shutdown(wait=True)
    log = tmp_path / "log.txt"
    jobs = [{"log": log, "x": x} for x in (2, 3)]
    first = run_jobs(counted_cached, jobs, n_jobs=2)
    second = run_jobs(counted_cached, jobs, n_jobs=1)
    same(second, first)
    assert sorted(computations(log)) == ["2 1", "3 1"]


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(CACHE_ENV, "off")
    log = tmp_path / "log.txt"
    counted_cached(log, 2)
    counted_cached(log, 2)
    assert computations(log) == ["2 1", "2 1"]
    assert not (tmp_path / "_build").exists()


def test_cached_refuses_what_is_not_callable():
    with pytest.raises(TypeError, match="fn"):
        cached("counted")
    with pytest.raises(TypeError, match="reads"):
        cached(counted, reads="log.txt")
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        counted_cached("log.txt", 1, z=2)


def test_other_package_versions_recompute(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    log = tmp_path / "log.txt"
    counted_cached(log, 3)
    counted_cached(log, 3)
    versions = sweeps.package_versions()
    assert set(versions) == {"python", *KEY_PACKAGES}
    assert versions["torch"] == torch.__version__.split("+")[0] or versions["torch"]
    monkeypatch.setattr(sweeps, "package_versions", lambda: {**versions, "numpy": "0.0.1"})
    counted_cached(log, 3)
    assert computations(log) == ["3 1", "3 1"]


def test_key_packages_cover_the_runtime_dependencies():
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    names = {re.match(r"[A-Za-z0-9_.-]+", d).group(0) for d in project["project"]["dependencies"]}
    assert names <= set(KEY_PACKAGES)


def read_sum(path, scale=1.0):
    """A cached computation that reads a file: each computation appends to ``path``.log."""
    with open(f"{path}.log", "a") as file:
        file.write("computed\n")
    return scale * sum(float(v) for v in Path(path).read_text().split())


read_sum_cached = cached(read_sum, reads=lambda path, scale=1.0: [path])


def test_the_data_read_key_the_result(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    data = tmp_path / "numbers.txt"
    data.write_text("1 2 3")
    assert read_sum_cached(data) == 6 and read_sum_cached(data) == 6
    data.write_text("1 2 4")
    assert read_sum_cached(data) == 7
    assert Path(f"{data}.log").read_text().count("computed") == 2


def test_data_version():
    here = Path(__file__)
    assert data_version([here]) == data_version([here, here])
    assert data_version([]) != data_version([here])
    assert data_version([here.parent]) != data_version([here])
    with pytest.raises(ValueError, match="paths.*missing"):
        data_version([here.parent / "missing"])
    with pytest.raises(TypeError, match="paths"):
        data_version([3])


def library_caches():
    """Every cached function of the library (module-level :class:`Cached` objects)."""
    found = {}
    for info in pkgutil.walk_packages(physid.__path__, "physid."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Cached) and value.__module__ == info.name:
                found[f"{info.name}.{name}"] = value
    return found


CACHES = library_caches()


def test_the_library_caches_only_through_cached():
    assert {
        "physid.pushing.observations._bullet_run",
        "physid.inference.chapters.inference_real_pendulum._run",
        "physid.inference.chapters.inference_real_box._recording",
        "physid.inference.chapters.inference_real_box._phase_one",
        "physid.inference.chapters.inference_real_box._phase_two",
        "physid.contact.training._task_data",
        "physid.contact.training._fit_job",
    } <= set(CACHES)
    root = Path(physid.__file__).parent
    for path in root.rglob("*.py"):
        if path.name != "sweeps.py":
            text = path.read_text()
            assert "memory()" not in text and "Memory(" not in text, path


@pytest.mark.parametrize("name", sorted(CACHES))
def test_an_edit_of_the_library_changes_every_cache_key(name, scratch_package, monkeypatch):
    cache = CACHES[name]
    monkeypatch.setattr(sweeps, "VERSIONED_PACKAGE", "scratch_sweeps")
    before = cache.key()
    assert cache.key() == before
    (scratch_package / "model.py").write_text("def f(x):\n    return x + 3\n")
    assert cache.key()["code"] != before["code"]


def test_an_edit_of_the_library_recomputes(tmp_path, scratch_package, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(sweeps, "VERSIONED_PACKAGE", "scratch_sweeps")
    log = tmp_path / "log.txt"
    counted_cached(log, 5)
    counted_cached(log, 5)
    (scratch_package / "model.py").write_text("def f(x):\n    return x - 1\n")
    counted_cached(log, 5)
    assert computations(log) == ["5 1", "5 1"]


# -- code versions ---------------------------------------------------------------------------


@pytest.fixture
def scratch_package(tmp_path, monkeypatch):
    """A package ``scratch_sweeps`` with one module, importable for this test only."""
    package = tmp_path / "scratch_sweeps"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for name in [n for n in sys.modules if n.startswith("scratch_sweeps")]:
        del sys.modules[name]


def test_code_version_changes_with_the_source(scratch_package):
    module = importlib.import_module("scratch_sweeps.model")
    package = sys.modules["scratch_sweeps"]
    before, before_package = code_version(module), code_version(package)
    assert len(before) == sweeps.VERSION_DIGITS
    assert int(before, 16) >= 0
    assert code_version(module) == before
    assert code_version(module, package) != before
    (scratch_package / "model.py").write_text("def f(x):\n    return x + 2\n")
    assert code_version(module) != before
    assert code_version(package) != before_package
    (scratch_package / "other.py").write_text("")
    changed = code_version(package)
    assert changed != before_package
    assert code_version(module) == code_version(module)


def test_code_version_of_the_library_is_stable():
    import physid.pushing

    assert code_version(physid.pushing) == code_version(physid.pushing)
    assert code_version(sweeps) != code_version(physid.pushing)


@pytest.mark.parametrize("bad", [(), ("physid.core.sweeps",), (sys,)])
def test_code_version_refuses_what_has_no_source(bad):
    with pytest.raises((TypeError, ValueError), match="module"):
        code_version(*bad)
