"""Shared pytest configuration: the hypothesis profiles."""

import os

from hypothesis import HealthCheck, settings

# The profile alone sets how many examples a property test runs: no test hard-codes max_examples
# (docs/testing.md). No deadline anywhere: a 2-core CI machine is slow and noisy.
# ci (the default): derandomized, so CI runs the same examples every time and a red run is a
# regression, not luck; a moderate number of examples keeps the suite fast
settings.register_profile("ci", deadline=None, max_examples=40, print_blob=True, derandomize=True)
# HYPOTHESIS_PROFILE=explore: fresh random examples each run
settings.register_profile("explore", deadline=None, max_examples=40, print_blob=True)
# HYPOTHESIS_PROFILE=thorough for a longer local hunt
settings.register_profile("thorough", deadline=None, max_examples=500, print_blob=True)
# HYPOTHESIS_PROFILE=nightly: a scheduled hunt, fresh examples, 1,000 per property test; a long run
# of slow examples is expected there, not a health problem
settings.register_profile("nightly", deadline=None, max_examples=1000, print_blob=True, derandomize=False,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- real data sets: tests marked `data` skip when the shared data folder is not found ----------

import pytest  # noqa: E402


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip every ``@pytest.mark.data`` test when :func:`qpcore_formulations.data.files.data_dir` finds no folder."""
    from qpcore_formulations.data.files import data_dir

    marked = [item for item in items if item.get_closest_marker("data") is not None]
    if not marked:
        return
    try:
        data_dir()
    except FileNotFoundError:
        skip = pytest.mark.skip(reason="real data sets not found: set QPCORE_DATA or put shared/data beside "
                                       "the repository")
        for item in marked:
            item.add_marker(skip)


# --- a local Dask cluster for the chunked (distributed) backend ----------------------------------

@pytest.fixture(scope="module")
def dask_client():  # type: ignore[no-untyped-def]
    """A ``distributed.LocalCluster`` with 2 worker processes (1 thread each), per test module.

    The chunked backend's tests run on it as they would on a real cluster: every chunk task is
    pickled to another process. About 3 s to start; closed at the module's end so that no idle
    cluster shares the machine with the wall-clock tests of the time limits that run later.
    """
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
