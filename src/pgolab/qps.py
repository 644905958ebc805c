"""QPS mode: short paired sysbench slices on freshly started servers.

Every instance starts each target's server anew (pinned to its own CPUs when there
are two or more; sysbench runs on the others) and warms it with the microbenchmark
itself. A slice is one sysbench run of `slice_seconds`; the server's own CPU time
per query is read from /proc around it.
"""

from __future__ import annotations

import time

from .errors import PgolabError
from .fleet import BenchOptions, Fleet, cpu_sets, sysbench_argv
from .processes import process_cpu_seconds
from .measurement import Sample, Step
from .runner import format_command
from .schedule import start_order
from .suite import Micro
from .sysbench_output import SysbenchParseError, parse

RESUME_HINT = "stored samples are kept; fix the cause and run the same command to resume"


class QpsExecutor:
    mode = "qps"
    concurrency = 1   # wall-clock figures: one slice at a time

    def __init__(self, fleet: Fleet, options: BenchOptions, labels: list[str]):
        self.fleet, self.options, self.labels = fleet, options, labels
        cpus = cpu_sets() if options.pin else None
        self.server_wrapper = ["taskset", "-c", cpus[0]] if cpus else []
        self.client_wrapper = ["taskset", "-c", cpus[1]] if cpus else []

    def start_instance(self, micro: Micro, instance: int) -> None:
        order = start_order(self.labels, instance)
        for label in order:
            self.fleet.start(label, self.mode, self.server_wrapper, [])
        for label in order:   # sysbench 1.0 has no --warmup-time
            server = self.fleet.servers[label]
            argv = sysbench_argv(micro, server, self.options, seconds=self.options.warmup_seconds)
            server.runner.run([*self.client_wrapper, *argv], what="warm-up")

    def measure(self, micro: Micro, step: Step) -> Sample:
        server = self.fleet.servers[step.label]
        server.check_alive()
        argv = [*self.client_wrapper, *sysbench_argv(micro, server, self.options, seconds=self.options.slice_seconds,
                                                     seed=1000 * step.instance + step.block)]
        user0, sys0 = process_cpu_seconds(server.proc.pid)
        result = server.runner.run(argv, check=False, what=f"sysbench {step.micro}")
        time.sleep(0.1)   # let the postmaster reap the finished backend so its CPU time is counted
        server.check_alive()
        user1, sys1 = process_cpu_seconds(server.proc.pid)
        try:
            parsed = parse(result.output)
        except SysbenchParseError as exc:
            raise PgolabError(f"sysbench {step.micro} on {step.label} gave no result: {exc}",
                              detail=result.output[-3000:], log=server.runner.log_path, hint=RESUME_HINT)
        if result.returncode != 0 or parsed.fatal or not parsed.queries:
            raise PgolabError(f"sysbench {step.micro} on {step.label} failed (exit {result.returncode})",
                              detail="\n".join(parsed.fatal) or result.output[-3000:],
                              log=server.runner.log_path, hint=RESUME_HINT)
        cpu = (user1 - user0) + (sys1 - sys0)
        return Sample(step, {"qps": parsed.qps, "cpu_us": cpu / parsed.queries * 1e6}, parsed.seconds,
                      detail={"tps": parsed.tps, "queries": parsed.queries, "errors": parsed.errors,
                              "reconnects": parsed.reconnects, "latency": parsed.latency_ms,
                              "cpu_user_s": user1 - user0, "cpu_sys_s": sys1 - sys0},
                      command=format_command(argv, None, {}), output=result.output)

    def stop_instance(self) -> None:
        self.fleet.stop()

    def close(self) -> None:
        self.fleet.stop()
