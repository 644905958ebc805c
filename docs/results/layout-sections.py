"""What each layout axis left in its binary (issue 35; run by the layout proofs' run.sh), from the installed servers themselves:
text sections by name and size (readelf), functions split into a `.cold` part (nm), how closely
an _order build follows its function order (the order file's functions found in the binary, and the
share of consecutive pairs whose addresses increase), and BOLT's options and hugify runtime.
Usage: python sections.py SOURCE VARIANT..."""

import re
import subprocess
import sys
from pathlib import Path

from pgolab.record import BuildRecord
from pgolab.variants import FUNCTION_ORDER, parse


def text_sections(binary: Path) -> list[tuple[str, int]]:
    out = subprocess.run(["readelf", "-SW", str(binary)], capture_output=True, text=True, check=True).stdout
    found = re.findall(r"\]\s+(\.text\S*|\.bolt\S*)\s+\S+\s+\S+\s+\S+\s+([0-9a-f]+)", out)
    return [(name, int(size, 16)) for name, size in found]


def symbols(binary: Path) -> dict[str, int]:
    out = subprocess.run(["nm", "--defined-only", str(binary)], capture_output=True, text=True, check=True).stdout
    table = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            table.setdefault(parts[2], int(parts[0], 16))
    return table


def order_followed(order_file: Path, table: dict[str, int]) -> str:
    """lld places a symbol of the order only under its exact name; ThinLTO renames promoted static
    functions NAME.llvm.<hash>, which the order does not reach: counted apart."""
    names = [n for n in order_file.read_text().splitlines() if n.strip() and not n.startswith("#")]
    exact = [table[n] for n in names if n in table]
    stems = {sym.split(".llvm.")[0] for sym in table if ".llvm." in sym}
    renamed = sum(1 for n in names if n not in table and n in stems)
    rising = sum(b > a for a, b in zip(exact, exact[1:]))
    return (f"order file: {len(names)} functions, {len(exact)} found in the binary by their name, {renamed} more "
            f"renamed by ThinLTO (not placed); consecutive found pairs in rising address order: {rising} of "
            f"{max(len(exact) - 1, 0)}")


def main() -> None:
    source = Path(sys.argv[1])
    for name in sys.argv[2:]:
        record = BuildRecord.find(name, source)
        binary = Path(record.server_binary)
        table = symbols(binary)
        print(f"## {name}\nbinary {binary} ({binary.stat().st_size:,} bytes)")
        for section, size in text_sections(binary):
            print(f"  {section:<20} {size:>10,} bytes")
        cold = [s for s in table if re.search(r"\.cold(\.\d+)?$", s)]
        print(f"  functions with a .cold part: {len(cold)}")
        variant = parse(name)
        if variant.order:
            made = next((record.profile[p] for p in ("merge", "profile-import") if p in record.profile), {})
            order = made.get("function_order", {})
            print(f"  temporal profile: {order.get('traces_kept')} traces kept of {order.get('traces_seen')} seen")
            print("  " + order_followed(Path(order["file"]), table))
        if variant.bolt:
            optimize = record.bolt["bolt-optimize"]
            print(f"  BOLT {optimize['version']}: {' '.join(o for o in optimize['options'] if not o.startswith('-data='))}")
            print(f"  BOLT hugify runtime symbols: {sorted(s for s in table if 'hugify' in s.lower()) or 'none'}")
        if variant.hugify:
            print(f"  code on huge pages in the smoke test: {record.huge_code_kib} KiB")
        print()


if __name__ == "__main__":
    main()
