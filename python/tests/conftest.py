import sys
from pathlib import Path

# Run from a source checkout without installing the package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pytest  # noqa: E402

_CACHE = {}


@pytest.fixture(scope="session")
def example():
    """``example(key, **kwargs)`` -> a cached ``commlens_dump.demo.Example`` (tracing is the slow part)."""
    from commlens_dump.demo import build_example

    def get(key, **kwargs):
        if key not in _CACHE:
            _CACHE[key] = build_example(**kwargs)
        return _CACHE[key]
    return get


def pytest_configure(config):
    """One fake process group for the whole session, large enough for every test's meshes
    (it can be initialised only once per process)."""
    from torch_zoo import init
    init()
