"""`pgolab train --binary`: PGO inside the user's own build. PostgreSQL is built here the way a user
would, `configure`, `make` and `make install` with clang's -fprofile-generate and no pgolab; pgolab
trains the installed server, merges its profile and prints the flag that compiles the optimized
build with it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pgolab import user_build
from pgolab.errors import PgolabError
from pgolab.targets.postgresql import POSTGRESQL_MAKE_DIRS

from conftest import need
from conftest import test_scratch as scratch_root  # (a test_* name here would be collected as a test)


@pytest.mark.slow
def test_a_server_built_without_pgolab_is_trained_and_its_profile_merged(pg_tree):
    need("clang-16")
    build, prefix = scratch_root() / "user-build", scratch_root() / "user-install"
    build.mkdir(parents=True, exist_ok=True)
    # -O0: what is tested is how pgolab finds, trains and merges an instrumented server it did not
    # build; an optimized instrumented build would add CI time and test nothing more of that.
    env = {**os.environ, "CC": "clang-16", "CFLAGS": "-O0 -fprofile-generate"}
    # The server and what initialising and running it needs, as a user building only the server
    # would: the whole tree's other clients and tests would add CI time and test nothing more here.
    dirs = ["src/port", "src/common", *POSTGRESQL_MAKE_DIRS]
    steps = [[str(pg_tree.path / "configure"), f"--prefix={prefix}", "--without-icu", "--without-readline"],
             ["make", "-C", "src/backend", "generated-headers"],
             *(["make", "-j2", "-C", d] for d in dirs), *(["make", "-C", d, "install"] for d in dirs[2:])]
    for argv in steps:
        done = subprocess.run(argv, cwd=build, env=env, capture_output=True, text=True, timeout=3000)
        assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-3000:])
    binary = prefix / "bin" / "postgres"
    assert user_build.compiler_of(binary).name == "clang"

    profiles = scratch_root() / "user-profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "raw-from-before.profraw").write_bytes(b"old")       # an earlier training's file goes
    run = subprocess.run([sys.executable, "-m", "pgolab", "train", "--binary", str(binary), "--profile-dir",
                          str(profiles), "--train-seconds", "10"], capture_output=True, text=True, timeout=900)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "removed 1 profile files of an earlier training" in out
    merged = profiles / "default.profdata"
    assert merged.stat().st_size > 0 and not (profiles / "raw-from-before.profraw").exists()
    functions = int(re.search(r"(\d+) functions; clang\)", out.replace("\n", " ")).group(1))
    assert functions > 1000
    assert f"-fprofile-use={merged}" in out.replace("\n", "")
    # Every process the training started wrote a file of its own (PostgreSQL forks per connection).
    assert len(list(profiles.glob("raw-*.profraw"))) > 2


def test_a_binary_without_clang_instrumentation_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(PgolabError, match="carries no profile instrumentation") as err:
        user_build.compiler_of(Path(sys.executable).resolve())
    assert "-fprofile-generate" in err.value.hint
    text = tmp_path / "postgres"
    text.write_text("#!/bin/sh\n")
    with pytest.raises(PgolabError, match="not an ELF executable"):
        user_build.compiler_of(text)


def test_verify_s_fresh_server_starts_answers_and_leaves_nothing_without_an_environment():
    """`pgolab verify` starts the optimized server as it is, with no environment of its own (a CMake
    proof's verify once failed there, logging the start line). Debian's mariadbd stands in for it."""
    from pgolab import paths
    from pgolab.targets import MariaDBInstallation
    need("mariadbd")
    installation = MariaDBInstallation.system()
    with user_build.fresh_server(installation, "verify") as (server, runner), server:
        assert server.env == {}
        assert "MariaDB" in server.query(installation.version_sql(), what="version query")
        work = server.datadir.parent
    assert not work.exists() and "start server" in runner.log_path.read_text()
    assert not list((paths.home() / "work").glob("verify-*"))
