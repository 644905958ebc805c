"""The machine a run measured on: CPU (model name, family/model/stepping, caches), cores, memory,
kernel. Stored with every run; QPS figures belong to the machine that took them."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass
from pathlib import Path

from .stored import known_fields

NOT_RECORDED = "not recorded"   # what a run stored before a field existed says of it


def cpu_identity(cpuinfo: str) -> str:
    """Family, model and stepping from /proc/cpuinfo: "AMD EPYC" alone names several generations
    whose front ends price the same code very differently."""
    found = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        found.setdefault(key.strip(), value.strip())
    parts = [f"{name} {found[name]}" for name in ("cpu family", "model", "stepping") if name in found]
    return ", ".join(parts) or "unknown"


CACHE_KINDS = {"Data": "d", "Instruction": "i"}     # sysfs "Unified" caches get no letter


def cache_sizes(cache_dir: Path) -> str:
    """cpu0's caches from sysfs, e.g. "L1d 48K, L1i 32K, L2 1024K, L3 32768K"."""
    found = []
    for index in sorted(cache_dir.glob("index*")):
        try:
            level, kind, size = ((index / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        found.append(f"L{level}{CACHE_KINDS.get(kind, '')} {size}")
    return ", ".join(found) or "unknown"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


@dataclass(frozen=True)
class Host:
    # The defaults are what a run stored before a field existed says of it.
    cpu: str = NOT_RECORDED
    cpu_id: str = "family " + NOT_RECORDED    # family, model, stepping
    caches: str = NOT_RECORDED
    cores: int | str | None = NOT_RECORDED
    kernel: str = NOT_RECORDED
    memory_gib: float | str = NOT_RECORDED
    hostname: str = NOT_RECORDED

    @classmethod
    def this(cls) -> "Host":
        cpuinfo = _read("/proc/cpuinfo")
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines()
                    if line.startswith("model name")), "unknown")
        mem_kb = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                       if line.startswith("MemTotal:")), 0)
        return cls(cpu=cpu, cpu_id=cpu_identity(cpuinfo),
                   caches=cache_sizes(Path("/sys/devices/system/cpu/cpu0/cache")), cores=os.cpu_count(),
                   kernel=platform.release(), memory_gib=round(mem_kb / 1024 / 1024, 1), hostname=platform.node())

    @classmethod
    def from_dict(cls, data: dict) -> "Host":
        """As stored with a run; a field an older pgolab did not record reads NOT_RECORDED."""
        return cls(**known_fields(cls, data))

    def as_dict(self) -> dict:
        return asdict(self)

    def identity(self) -> dict:
        """What a resumed run must match: all of it (another machine is another experiment)."""
        return self.as_dict()

    def model(self) -> str:
        """The CPU model wall-clock figures hold for, e.g. "AMD EPYC (family 26, model 2)": the name
        alone covers generations that price the same code differently; the stepping is left out."""
        parts = [p for p in self.cpu_id.replace("cpu family", "family").split(", ") if not p.startswith("stepping")]
        return f"{self.cpu} ({', '.join(parts)})"

    def describe(self) -> str:
        return (f"{self.cpu} ({self.cpu_id}; caches {self.caches}), {self.cores} cores, {self.memory_gib} GiB, "
                f"kernel {self.kernel}")
