"""The link and run-time axes on a real PostgreSQL build: `-fno-plt`, `-fno-semantic-interposition`
and jemalloc as malloc, configured, compiled with their flags, linked, and answering a query; an
allocator this machine lacks is refused before anything is built."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pgolab import elf, toolchains
from pgolab.build import BuildRequest, Pipeline
from pgolab.errors import PgolabError
from pgolab.sources import SourceTree
from pgolab.variants import parse
from pgolab.workloads import parse_train


@pytest.mark.slow
def test_link_axes_are_compiled_linked_and_answer(pg_tree):
    variant = "rel_o2nofp_noplt_nosi_jemalloc"
    run = subprocess.run([sys.executable, "-m", "pgolab", "build", str(pg_tree.path), "--variant", variant, "--json"],
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads(run.stdout)[0]
    assert record["smoke"] and "PostgreSQL 15" in record["smoke"]
    binary = Path(record["server_binary"])
    assert any(n.startswith("libjemalloc.so") for n in elf.needed_libraries(binary))
    log = (Path(record["logs"]) / "build.log").read_text(errors="replace")
    compiles = [line for line in log.splitlines() if " -c " in line and "postgres.c" in line]
    assert compiles and all("-fno-plt" in c and "-fno-semantic-interposition" in c for c in compiles)
    # Calls into shared libraries go through the GOT: the binary has (almost) no PLT left, against
    # Debian's build of the same server, which has one stub per library function it calls.
    debian_postgres = Path("/usr/lib/postgresql/15/bin/postgres")
    plt = {s.name: s.size for s in elf.sections(binary)}.get(".plt", 0)
    assert plt < {s.name: s.size for s in elf.sections(debian_postgres)}[".plt"] / 4
    assert not any(n.startswith("libjemalloc") for n in elf.needed_libraries(debian_postgres))


def test_an_allocator_this_machine_lacks_is_refused_with_its_package(tmp_path, monkeypatch):
    monkeypatch.setattr(toolchains.Path, "exists", lambda self: False)
    tree = SourceTree(tmp_path, "postgresql", "15.18")
    with pytest.raises(PgolabError, match="libmimalloc.so not found") as err:
        Pipeline(BuildRequest(tree, parse("rel_o2nofp_mimalloc"), parse_train("none", 0)))
    assert "apt-get install libmimalloc-dev" in err.value.hint
