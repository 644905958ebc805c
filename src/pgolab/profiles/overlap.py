"""Comparing two profiles function by function (`pgolab profile-check`): how well a training
covers a benchmark, from each profile tool's per-function weights."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class OverlapReport:
    method: str
    overlap: float                 # 0..1: sum over functions of min(share in A, share in B)
    tool_overlap: str | None       # the compiler tool's own figure, where it has one
    functions_benchmark: int
    functions_training: int
    unreached_hot: list[tuple[str, float]]   # benchmark functions the training never ran, with their share

    def describe(self) -> str:
        lines = [f"profile overlap (training vs benchmark): {self.overlap * 100:.1f}% ({self.method})"]
        if self.tool_overlap:
            lines.append(f"  {self.tool_overlap}")
        lines.append(f"  functions run: {self.functions_benchmark} by the benchmark, "
                     f"{self.functions_training} by the training")
        if self.unreached_hot:
            lines.append("  hottest benchmark functions the training did not reach:")
            lines += [f"    {share * 100:6.2f}%  {name}" for name, share in self.unreached_hot]
        else:
            lines.append("  the training reached every function the benchmark ran")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return asdict(self)


def overlap(training: dict[str, int], benchmark: dict[str, int], method: str, top: int = 15,
            tool_overlap: str | None = None) -> OverlapReport:
    t_total = sum(training.values()) or 1
    b_total = sum(benchmark.values()) or 1
    names = set(training) | set(benchmark)
    score = sum(min(training.get(n, 0) / t_total, benchmark.get(n, 0) / b_total) for n in names)
    unreached = sorted(((n, c / b_total) for n, c in benchmark.items() if c and not training.get(n)),
                       key=lambda x: -x[1])[:top]
    return OverlapReport(method, score, tool_overlap, sum(1 for c in benchmark.values() if c),
                         sum(1 for c in training.values() if c), unreached)
