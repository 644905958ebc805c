"""QPS mode: short paired sysbench slices on freshly started servers.

Every instance starts each target's server anew (pinned to its own CPUs when there
are two or more; sysbench runs on the others) and warms it with the microbenchmark
itself. A slice is one sysbench run of `slice_seconds`; the server's own CPU time
per query is read from /proc around it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from .. import stats
from ..errors import PgolabError
from .. import clients
from ..fleet import Fleet, cpu_sets, cpu_split
from ..measurement import BenchOptions, Sample, Step
from ..processes import CpuReading, live_children_cpu_seconds, other_work, process_cpu_seconds
from ..runner import format_command
from ..schedule import Plan, start_order
from ..suite import Micro
from ..sysbench_output import SysbenchParseError
from ..document import words
from .base import Measure

if TYPE_CHECKING:
    from ..analysis import Analysis

RESUME_HINT = "stored samples are kept; fix the cause and run the same command to resume"
# Other work beside a slice, in cores, above which the machine was not the measurement's alone. An
# idle machine reads under it (pgolab's own polling is counted as its own; see other_work).
BUSY_CORES = 0.1
# The share of slices over BUSY_CORES that says the machine was not idle even when the median is
# under it: a job that ran for a quarter of the run disturbed a quarter of its pairs.
BUSY_SHARE = 0.25


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
            argv = clients.of(micro).argv(micro, server, self.options, seconds=self.options.warmup_seconds)
            server.runner.run([*self.client_wrapper, *argv], what="warm-up")

    def measure(self, micro: Micro, step: Step) -> Sample:
        server = self.fleet.servers[step.label]
        server.check_alive()
        client = clients.of(micro)
        argv = [*self.client_wrapper, *client.argv(micro, server, self.options, seconds=self.options.slice_seconds,
                                                   seed=1000 * step.instance + step.block)]
        before = CpuReading.now()
        user0, sys0 = process_cpu_seconds(server.proc.pid)
        live0 = live_children_cpu_seconds(server.proc.pid)
        result = server.runner.run(argv, check=False, what=f"{client.name} {step.micro}")
        time.sleep(0.1)   # let the postmaster reap the finished backend so its CPU time is counted
        server.check_alive()
        user1, sys1 = process_cpu_seconds(server.proc.pid)
        live1 = live_children_cpu_seconds(server.proc.pid)
        after = CpuReading.now()
        try:
            parsed = client.parse(result.output)
        except SysbenchParseError as exc:
            raise PgolabError(f"{client.name} {step.micro} on {step.label} gave no result: {exc}",
                              detail=result.output[-3000:], log=server.runner.log_path, hint=RESUME_HINT)
        if result.returncode != 0 or parsed.fatal or not parsed.queries:
            raise PgolabError(f"{client.name} {step.micro} on {step.label} failed (exit {result.returncode})",
                              detail="\n".join(parsed.fatal) or result.output[-3000:],
                              log=server.runner.log_path, hint=RESUME_HINT)
        cpu = (user1 - user0) + (sys1 - sys0)
        other, steal = other_work(before, after, cpu + live1 - live0)
        return Sample(step, {"qps": parsed.qps, "cpu_us": cpu / parsed.queries * 1e6}, parsed.seconds,
                      detail={"tps": parsed.tps, "queries": parsed.queries, "errors": parsed.errors,
                              "reconnects": parsed.reconnects, "latency": parsed.latency_ms,
                              "cpu_user_s": user1 - user0, "cpu_sys_s": sys1 - sys0,
                              "other_cores": round(other, 3), "steal_cores": round(steal, 3)},
                      command=format_command(argv, None, {}), output=result.output)

    def stop_instance(self) -> None:
        self.fleet.stop()

    def close(self) -> None:
        self.fleet.stop()


class QpsMeasure(Measure):
    key = "qps"
    title = "QPS"
    machine_bound = True

    def plan(self, options: BenchOptions) -> Plan:
        return Plan(instances=options.instances, blocks=options.blocks,
                    max_instances=max(options.max_instances, options.instances), target_ci=options.target_ci,
                    pair_budget_s=options.pair_budget_s)

    def executor(self, fleet, options: BenchOptions, labels: list[str]) -> QpsExecutor:
        return QpsExecutor(fleet, options, labels)

    def facts(self, samples) -> list[str]:
        """How much other work ran beside the slices (recorded since 2026-11-28; older runs say nothing).
        Every measured slice counts, excluded outlier blocks too: the question is the machine's."""
        mine = [s.detail for s in samples if s.step.mode == self.key and "other_cores" in s.detail]
        if not mine:
            return []
        other = np.array([d["other_cores"] for d in mine])
        steal = np.array([d.get("steal_cores", 0.0) for d in mine])
        busy = int(np.sum(other > BUSY_CORES))
        line = (f"beside the QPS slices: other work took a median {max(np.median(other), 0.0):.2f} core "
                f"(readings {other.min():.2f} to {other.max():.2f}: about 0.02 is clock-tick rounding); "
                f"{busy} of {len(other)} slices had more than {BUSY_CORES} core of it")
        if steal.max() > 0.01:
            line += f"; the hypervisor stole a median {np.median(steal):.2f} core (max {steal.max():.2f})"
        causes = []
        if np.median(other) > BUSY_CORES:
            causes.append("other work ran beside most slices")
        elif busy >= BUSY_SHARE * len(other):
            causes.append(f"other work ran beside {busy} of {len(other)} slices")
        if np.median(steal) > BUSY_CORES:
            causes.append("the hypervisor took CPU time from most slices")
        if causes:
            line += (f". THE MACHINE WAS NOT IDLE ({'; '.join(causes)}): its wall-clock figures (QPS, server "
                     "CPU) include that interference, by an amount this figure does not give; measure again "
                     "with the machine to itself")
        return [line]

    def concurrency_line(self, options: BenchOptions, cores: int | None) -> str:
        split = cpu_split(cores) if options.pin and cores else None
        if split is None:
            where = (f"server and sysbench shared the machine's {cores or 'unrecorded number of'} CPU(s), unpinned")
            crowded = [t for t in options.threads if cores and t > cores]
            return (f"QPS: {where}." + (f" At {', '.join(map(str, crowded))} threads there were more server "
                                        f"connections than CPUs." if crowded else ""))
        server, client = split
        own = [t for t in options.threads if t <= server]
        shared = [t for t in options.threads if t > server]
        lines = [f"QPS: the server was pinned to {server} of the machine's {cores} CPUs, sysbench to the other "
                 f"{client}."]
        if own:
            lines.append(f"At {words(own)} thread{'s' if own[-1] > 1 else ''} each server connection could have a "
                         f"CPU of its own.")
        if shared:
            lines.append(f"At {words(shared)} threads the server's connections shared {server} CPU"
                         f"{'s' if server > 1 else ''} ({words([f'{t / server:g}' for t in shared])} per CPU): those "
                         f"figures show the build under more load than CPUs, not how it scales on a larger machine.")
        return " ".join(lines)

    def noise_lines(self, a: "Analysis", options: BenchOptions) -> list[str]:
        parts = []
        if self.key in options.modes:
            parts.append(f"{options.instances} server instance(s) per microbenchmark, "
                         f"{options.blocks} paired blocks of {options.slice_seconds} s each, "
                         f"order alternating within and between instances"
                         + (f", more instances (up to {options.max_instances}) until the 95% half-width is "
                            f"{options.target_ci * 100:.1f}% or {options.pair_budget_s} s per pair are "
                            f"spent" if options.target_ci else "") + ".")
        within = [stats.cv(v) for v in a.base_by_instance.get("qps", {}).values() if len(v) > 1]
        if within:
            parts.append(f"QPS: the base's coefficient of variation between slices of one server instance is "
                         f"{np.median(within) * 100:.1f}% (median over microbenchmark instances; max "
                         f"{max(within) * 100:.1f}%).")
            comps = [s.component for (f, _), s in a.suites.items() if f == "qps" and s.component.variance is not None]
            pooled = [c for c in comps if c.df >= 1]     # under one degree of freedom is no pooled figure
            if pooled:
                sd = np.median([np.sqrt(c.variance) for c in pooled]) * 100
                parts.append(f"Instance to instance, a build's paired log ratio moves with a standard deviation of "
                             f"{sd:.1f}% (pooled over the suite, {pooled[0].df:.0f} df); the intervals include it.")
            elif comps:
                parts.append("Instance to instance: the suite's tests left next to nothing to pool (under one degree "
                             "of freedom), so no pooled figure is given; the intervals carry that uncertainty, "
                             "and are wide for it.")
            else:
                parts.append("Each microbenchmark ran on one server instance only: instance-to-instance variation "
                             "(a few per cent on this kind of machine) is not in the intervals.")
        for label in a.labels:
            suite = a.suites.get(("qps", label))
            halves = [suite.micro(k).half_width for k in suite.micros] if suite else []
            halves = [h for h in halves if h is not None]
            if halves:
                parts.append(f"{label}: per-microbenchmark 95% half-width of rQPS median "
                             f"{np.median(halves) * 100:.1f}%, max {max(halves) * 100:.1f}%; over the suite "
                             f"±{suite.summary().half_width * 100:.1f}%.")
            if suite and suite.own:
                parts.append(f"{label}: the instances of {', '.join(sorted(suite.own))} differed far more than the "
                             f"other tests' (F test, {stats.STANDS_OUT_FAMILY_P:.0%} over the suite), so those carry "
                             f"their own instance variance with few degrees of freedom: wide intervals, not a wider "
                             f"pool for every test.")
        cpu = [stats.cv(v) for v in a.base_by_instance.get("cpu_us", {}).values() if len(v) > 1]
        if cpu:
            parts.append(f"The base's server CPU per query varies with a CV of {np.median(cpu) * 100:.1f}% (median).")
        return parts


QPS = QpsMeasure()
