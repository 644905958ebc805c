import os
import shutil
import tempfile
from pathlib import Path

import pytest


def pytest_configure(config):
    """One pgolab home for the session (sources are fetched once), outside ~ so that the
    unprivileged user PostgreSQL runs as can reach it. PGOLAB_TEST_HOME picks another; under
    pytest-xdist each worker takes a folder of its own in it, since two workers fetching or
    building the same thing in one home would race."""
    home = os.environ.get("PGOLAB_TEST_HOME")
    if home and os.environ.get("PYTEST_XDIST_WORKER"):
        home = str(Path(home) / os.environ["PYTEST_XDIST_WORKER"])
    if not home:
        home = tempfile.mkdtemp(prefix="pgolab-test-home-")
        os.chmod(home, 0o755)
        config._pgolab_temp_home = home
    Path(home).mkdir(parents=True, exist_ok=True)
    os.environ["PGOLAB_HOME"] = home


def thp_enabled() -> bool:
    """Whether the kernel gives anonymous memory transparent huge pages (what _hugetext's copy needs)."""
    path = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    return path.exists() and "[never]" not in path.read_text()


def need(program: str) -> None:
    """Skip the test when a program it runs is missing, naming the Debian package that provides it."""
    if shutil.which(program):
        return
    from pgolab.toolchains import TOOLS
    package = next((t.package for t in TOOLS if t.program == program), None)
    fix = f"apt-get install {package}" if package else "install it"
    pytest.skip(f"{program} is not installed: {fix} (scripts/setup-system.sh installs every tool)")


@pytest.fixture(scope="module")
def pg_tree(tmp_path_factory):
    """PostgreSQL's source from Debian 12, fetched into the session's pgolab home (once per worker)."""
    from pgolab import debian
    from pgolab.runner import Runner
    need("apt-get")
    need("sysbench")
    return debian.fetch("postgresql", None, Runner(tmp_path_factory.mktemp("src") / "source.log"))


def long_test(what: str):
    """A test beyond CI's time budget: it runs on request (PGOLAB_LONG_TESTS=1), and its results are
    committed with the command that ran it."""
    return pytest.mark.skipif(os.environ.get("PGOLAB_LONG_TESTS") != "1",
                              reason=f"{what}, beyond CI's budget: run with PGOLAB_LONG_TESTS=1")


def write_empty_clang_profile(target: Path) -> None:
    """A real, empty merged clang profile: what a clang -fprofile-use configure needs to exist."""
    import subprocess
    target.parent.mkdir(parents=True, exist_ok=True)
    text = target.with_suffix(".proftext")
    text.write_text("# IR level Instrumentation Flag\n:ir\n")
    subprocess.run(["llvm-profdata-16", "merge", "-o", str(target), str(text)], check=True)


def configure_variant(tree, name: str, distribution=None):
    """Configure one variant of a real tree as the pipeline would (like the distribution's package,
    given its DistributionBuild): (variant, pipeline, build dir, CMakeCache.txt text, compile
    commands by source path suffix)."""
    import json
    import subprocess
    from pgolab.build import BuildRequest, Pipeline
    from pgolab.stages.compile import configure
    from pgolab.variants import parse
    from pgolab.workloads import parse_train
    variant = parse(name)
    pipeline = Pipeline(BuildRequest(tree, variant, parse_train("none", 1), distribution=distribution))
    if variant.pgo == "use" and variant.compiler == "clang":
        # clang reads the merged profile while compiling: give it a real, empty one.
        write_empty_clang_profile(pipeline.profile_dir / "default.profdata")
    context = pipeline.compile_context()      # what the pipeline's configure phase is handed
    configure(context)
    build = context.build_dir
    cache = (build / "CMakeCache.txt").read_text()
    subprocess.run(["cmake", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", str(build)], check=True, capture_output=True)
    commands = {c["file"]: c["command"].split() for c in json.loads((build / "compile_commands.json").read_text())}
    return variant, pipeline, build, cache, commands


def command_for(commands: dict, suffix: str) -> list[str]:
    return next(argv for path, argv in commands.items() if path.endswith(suffix))


def compile_one_object(build: Path, commands: dict, suffix: str) -> None:
    """One small object really compiles with the configured flags."""
    import subprocess
    argv = command_for(commands, suffix)
    obj = argv[argv.index("-o") + 1]
    if (build / "build.ninja").exists():
        subprocess.run(["ninja", "-C", str(build), obj], check=True, capture_output=True)
    else:   # make (a build like Debian's): each folder's Makefile has a target per object
        source = Path(suffix)
        obj = f"{source.parent}/{obj}"
        subprocess.run(["make", "-C", str(build / source.parent), f"{source.name}.o"], check=True, capture_output=True)
    assert (build / obj).stat().st_size > 0


def pytest_unconfigure(config):
    home = getattr(config, "_pgolab_temp_home", None)
    if home:
        shutil.rmtree(home, ignore_errors=True)


def test_scratch() -> Path:
    """Tests' own files inside the pgolab home, where the unprivileged server user can reach them
    (pytest's tmp_path is private to root)."""
    return Path(os.environ["PGOLAB_HOME"]) / "test-scratch"


@pytest.fixture
def server_tmp(request):
    """A scratch directory of this test's that the unprivileged server user can reach."""
    import re
    path = test_scratch() / re.sub(r"\W", "_", request.node.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    path.chmod(0o755)
    return path


# The file that runs longest goes first, so that under `pytest -n 2 --dist loadfile
# --no-loadscope-reorder` (scripts/test.sh) one worker starts it at once while the other takes
# every other file: CI's wall time is then about that file's, not the sum of all.
# Its two long tests stay in one file, on one worker: split across both (ci16), each ran at about
# half speed on the 2 cores, and the matrix had to build its own base instead of finding the gcc
# pipeline's: the run took over 50 minutes instead of 39.
LONGEST_FIRST = ("test_pipeline_postgresql.py",)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)
