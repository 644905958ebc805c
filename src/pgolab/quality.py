"""How well a training profile covers a benchmark (`pgolab profile-check`).

The instrumented build runs the benchmark suite once (or a workload the user
chooses) with its profile sent to a second directory; the two profiles are then
compared function by function: the overlap is the sum over functions of the
smaller of their shares of all counts in each profile (1.0 = the same
distribution), and the hottest benchmark functions the training never ran are
listed. With clang, llvm-profdata's own overlap figure is reported too.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

from . import bench, profiles
from .build import BuildRequest, Pipeline, Reporter
from .errors import PgolabError
from .record import RECORD_FILE, BinaryInfo, BuildRecord
from .runner import Runner
from .stages.pgo import PROFILE_READY
from .store import Store
from .paths import chown_tree
from .workloads import TrainingSpec, run_training


def profile_check(request: BuildRequest, reporter: Reporter | None = None, *, suite: str = "quick",
                  seconds: int = 5, workload: TrainingSpec | None = None) -> profiles.OverlapReport:
    if request.variant.pgo != "use":
        raise PgolabError(f"{request.variant.name} is not a PGO variant",
                          hint="profile-check compares a PGO variant's training profile, e.g. --variant rel_pgo_use")
    if request.variant.cs:
        # Its second profile only completes the first: compare the first, which the same training wrote.
        plain = replace(request.variant, cs=False)
        raise PgolabError(f"{request.variant.name}'s context-sensitive profile has no benchmark twin",
                          hint=f"check the first-stage profile of the same training: --variant {plain.name}")
    # A _bolt build reads its twin's profile: the twin's pipeline made it, and is checked.
    pipeline = Pipeline(request, reporter).profile_owner
    pipeline.run(until=PROFILE_READY)    # instrumented build and training profile, built if missing
    bench_dir = pipeline.dir / "profile-benchmark"
    shutil.rmtree(bench_dir, ignore_errors=True)
    bench_dir.mkdir(parents=True)
    servers = pipeline.servers
    installation = servers.installation("gen")
    if installation.run_as:
        chown_tree(bench_dir, installation.run_as)
    env = pipeline.profile_tool.redirect_env(pipeline.instrumented.profile_dir, bench_dir)
    runner = Runner(pipeline.logs / "profile-check.log")
    if workload is None:
        binary = installation.server_binary
        target = bench.BenchTarget("instrumented", BinaryInfo.kind, installation,
                                   BinaryInfo(str(binary), "", f"the instrumented build of {request.variant.name}"),
                                   env=env)
        # A fresh store and data each time: this run measures nothing, it only exercises the server.
        store_path = pipeline.dir / "profile-check.sqlite"
        store_path.unlink(missing_ok=True)
        store = Store(store_path)
        run_name = f"profile-check-{pipeline.dir.parent.name}-{request.variant.name}"
        shutil.rmtree(bench.paths.runs_dir() / run_name, ignore_errors=True)
        options = bench.BenchOptions(suite=suite, instances=1, blocks=1, slice_seconds=seconds, warmup_seconds=2)
        bench.run_bench(store, run_name, "instrumented", [target], options, "pgolab profile-check")
        store.close()
        shutil.rmtree(bench.paths.runs_dir() / run_name, ignore_errors=True)
        what = f"the {suite} benchmark suite ({seconds}s per microbenchmark)"
    else:
        server = servers.serve("gen", "profile-check", runner, env=env)
        with server:
            run_training(server, workload, runner)
        shutil.rmtree(server.rundir, ignore_errors=True)
        what = f"workload {workload.label}"
    tool = pipeline.profile_tool
    profiles.require_raw_profiles(bench_dir, tool)
    tool.merge(bench_dir, runner)
    scratch = pipeline.dir / "profile-check-scratch"
    build_dir = pipeline.build_dir("gen")
    train_w = tool.function_weights(pipeline.profile_dir, build_dir, runner, scratch / "training")
    bench_w = tool.function_weights(bench_dir, build_dir, runner, scratch / "benchmark")
    shutil.rmtree(scratch, ignore_errors=True)
    report = profiles.overlap(train_w, bench_w, tool.weights_method,
                              tool_overlap=tool.overlap_figure(pipeline.profile_dir, bench_dir, runner))
    result = {"training": request.train.label, "benchmark": what, **report.as_dict()}
    pipeline.layout.profile_check.write_text(json.dumps(result, indent=2))
    # build.json states the figure from now on; a build not finished yet reads profile-check.json when it is.
    if (pipeline.dir / RECORD_FILE).exists():
        record = BuildRecord.load(pipeline.dir)
        record.profile_check = result
        record.save()
    return report
