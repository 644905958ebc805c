"""The link and run-time axes: an allocator this machine lacks is refused before anything is built.
(A real PostgreSQL build with -fno-plt, -fno-semantic-interposition, jemalloc and _hugetext is test_package.py's:
it is also the build packaged as a drop-in .deb.)"""

import pytest

from pgolab import toolchains
from pgolab.build import BuildRequest, Pipeline
from pgolab.errors import PgolabError
from pgolab.sources import SourceTree
from pgolab.variants import parse
from pgolab.workloads import parse_train


def test_an_allocator_this_machine_lacks_is_refused_with_its_package(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchains.Path, "exists", lambda self: False)
    tree = SourceTree(tmp_path, "postgresql", "15.18")
    with pytest.raises(PgolabError, match="libmimalloc.so not found") as err:
        Pipeline(BuildRequest(tree, parse("rel_o2nofp_mimalloc"), parse_train("none", 0)))
    assert "apt-get install libmimalloc-dev" in err.value.hint
