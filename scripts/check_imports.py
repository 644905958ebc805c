"""pgolab's import graph: no cycles, and no module imports one of a higher layer.

    .venv/bin/python scripts/check_imports.py        # scripts/test.sh runs it before pytest

Every module under src/pgolab is parsed with `ast`: imports at module level, inside functions and
under `if TYPE_CHECKING:` all count (a function-level or typing-only import is still a dependency;
it only hides a cycle from the interpreter). Relative imports are resolved; `from . import x`
names the module x when there is one. Importing a.b.c also runs the package a.b's __init__, so
that counts towards cycles (not towards layers) for modules outside a.b.

One line per problem, exit status 1 on any:
  cycle    modules that import each other, directly or round a loop
  upward   a module imports one of a higher layer in LAYERS
  unknown  a module LAYERS does not place: add it
A module of a package takes the package's layer unless LAYERS lists it itself.

It also prints how many pgolab modules `import pgolab.server` loads (in a fresh interpreter).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pgolab"

# Lower layers must not import higher ones; a layer may import its own. docs/design.md's data flow,
# bottom up: foundations, commands, what to build with, how a build runs, then the bench side, the
# report, and the commands that drive both.
LAYERS: dict[str, int] = {
    # no pgolab imports: errors, folders, /proc, ELF sections, labels, the host, statistics, parsing
    "__init__": 0, "errors": 0, "paths": 0, "processes": 0, "elf": 0, "labels": 0, "host": 0,
    "reproducible": 0, "stored": 0,
    "stats": 0, "sysbench_output": 0,
    # running and logging commands; the phase engine; scratch folders
    "runner": 1, "phases": 1, "scratch": 1,
    # source trees; the benchmark catalog; the training mix's SQL drivers
    "sources": 2, "suite": 2, "mix": 2, "replicates": 2,
    # Debian's source packages; the compilers' profiles (gcc, clang: flags, merge, checks), then the
    # compilers and their tools, which make them
    "debian": 3, "profiles": 3, "toolchains": 3,
    # the distribution's own build of a server (what a drop-in package is configured like)
    "distribution": 3,
    # variant names, axes and flags (per compiler); BOLT's profile, which finds llvm-bolt in toolchains
    "variants": 4, "profiles.bolt": 4,
    # per-server recipes; server processes; a build's folder
    "targets": 5, "server": 5, "layout": 5,
    # training loads; build.json and what a run stores of each target (it names profiles' figures and
    # asks a recipe for a build's installation)
    "workloads": 6, "record": 6,
    # one module per kind of phase
    "stages": 7,
    # a PGO build's profile as a file: exported from a build's record, read by the PGO stage
    "profile_file": 7,
    # a build's plan and its chain of instrumented builds
    "build": 8, "chain": 8,
    # a server the user built, trained (pgolab train --binary) and checked (pgolab verify); the CMake
    # module that runs both inside the user's own build (cmake -DWITH_PGO=ON)
    "user_build": 8, "cmake_module": 8,
    # the bench side: steps and figures, the report's document model, the store, data and servers
    # of a run, the scheduler, the measures (qps, cost), run identity
    "measurement": 9, "document": 9,
    # the load generators (sysbench, pgbench): their loads, command lines and reports
    "clients": 9,
    "store": 10, "fleet": 10,
    # when stored targets are one binary (file digest, else a vouched-for code digest)
    "binaries": 11,
    # install trees sent to another host (a cluster's bench host), checked by digest there
    "shipping": 11,
    "schedule": 11, "analysis": 11,
    "measures": 12,
    "bench": 13,
    # the report model, then its renderers
    "report": 14,
    # a run as one file (export, import): the store's rows and the PGO targets' profiles
    "runfile": 14,
    "render": 15, "charts": 15,
    # drivers of builds and benchmarks
    "matrix": 16, "quality": 16, "merge": 16, "machines": 17,
    # every axis pair of several runs of one server in one table
    "axis_table": 17,
    # a finished build as a .deb over the distribution's server, or a tarball, with what a run measured
    "package": 16,
    # a matrix on a Dask cluster: one task per build on the workers, merged here
    "cluster": 17,
    # the search for the fastest build: rounds of matrices, read through the report's analysis
    "best": 17,
    "cli": 18, "__main__": 18,
}

# Violations allowed while a refactor lands: (importer, imported) with why it is there. The imports an
# entry covers (a's modules importing b's) are taken out of the graph before both checks; an entry
# that covers no import any more is reported as a note. Empty since issue 29's refactor landed.
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    importer: str       # dotted module names, e.g. pgolab.targets.mariadb
    imported: str
    line: int
    lazy: bool          # inside a function
    typing: bool        # under `if TYPE_CHECKING:`
    through: bool = False   # the package __init__ that importing one of its modules runs

    def how(self) -> str:
        kinds = [k for k, on in (("in a function", self.lazy), ("typing only", self.typing),
                                 ("its package __init__", self.through)) if on]
        return f" ({', '.join(kinds)})" if kinds else ""


def module_names(src: Path, package: str) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package under src (the package's folder)."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        parts = (package, *path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(name: str, path: Path, modules: dict[str, Path], package: str) -> list[Import]:
    """The package's modules this one imports, wherever the import statement is."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: list[Import] = []

    def resolve(dotted: str) -> str | None:
        """The longest known module that dotted names (a.b.C -> a.b when C is a class)."""
        parts = dotted.split(".")
        while parts:
            candidate = ".".join(parts)
            if candidate in modules:
                return candidate
            parts.pop()
        return None

    def add(target: str | None, node: ast.stmt, lazy: bool, typing: bool) -> None:
        if target and target != name:
            found.append(Import(name, target, node.lineno, lazy, typing))

    def visit(node: ast.AST, lazy: bool, typing: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == package or alias.name.startswith(package + "."):
                    add(resolve(alias.name), node, lazy, typing)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                if node.level - 1 > len(here) - 1:
                    return   # beyond the package: not ours
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
                if origin != package and not origin.startswith(package + "."):
                    return
            for alias in node.names:
                sub = f"{origin}.{alias.name}"
                add(sub if sub in modules else resolve(origin), node, lazy, typing)
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.If) and _is_type_checking(node.test) and child in node.body:
                visit(child, lazy, True)
            else:
                visit(child, lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
                      typing)

    visit(ast.parse(path.read_text(), str(path)), False, False)
    # Importing a.b.c first runs a.b's __init__ (for a module outside a.b).
    for imp in [i for i in found if not i.typing]:
        parts = imp.imported.split(".")
        for n in range(2, len(parts)):
            parent = ".".join(parts[:n])
            if parent in modules and not (name == parent or name.startswith(parent + ".")):
                found.append(Import(name, parent, imp.line, imp.lazy, imp.typing, through=True))
    return found


def layer_of(module: str, layers: dict[str, int], package: str) -> int | None:
    """The module's own layer, else its nearest listed package's."""
    parts = module.split(".")[1:] or ["__init__"]
    while parts:
        key = ".".join(parts)
        if key in layers:
            return layers[key]
        parts.pop()
    return None


def short(module: str, package: str) -> str:
    return module[len(package) + 1:] if module.startswith(package + ".") else "__init__"


def within(module: str, listed: str) -> bool:
    return module == listed or module.startswith(listed + ".")


def allowance(imp: Import, allowed: dict[tuple[str, str], str], package: str) -> tuple[str, str] | None:
    """The ALLOWED entry covering this import: (a, b) covers a's modules importing b's."""
    importer, imported = short(imp.importer, package), short(imp.imported, package)
    return next((key for key in allowed if within(importer, key[0]) and within(imported, key[1])), None)


def find_cycles(edges: dict[str, dict[str, Import]]) -> list[list[str]]:
    """One cycle (a, b, ..., a) per strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:        # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))
    for v in sorted(edges):
        if v not in index:
            connect(v)
    cycles = []
    for component in sorted(components):
        members = set(component)
        start = component[0]
        # Shortest way back to the start within the component (breadth first).
        previous: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in previous:
            following = []
            for v in frontier:
                for w in sorted(edges.get(v, {})):
                    if w in members and w not in previous:
                        previous[w] = v
                        following.append(w)
            frontier = following
        path = [start]
        while True:
            before = previous[path[-1]]
            if before == start:
                break
            path.append(before)
        cycles.append([start, *reversed(path[1:]), start])
    return cycles


def check(src: Path, package: str = PACKAGE, layers: dict[str, int] = LAYERS,
          allowed: dict[tuple[str, str], str] | None = None) -> tuple[list[str], list[str]]:
    """(problems, notes): one line each."""
    allowed = ALLOWED if allowed is None else allowed
    modules = module_names(src, package)
    problems: list[str] = []
    notes: list[str] = []
    edges: dict[str, dict[str, Import]] = {m: {} for m in modules}
    used_allowances = set()
    for name, path in modules.items():
        for imp in imports_of(name, path, modules, package):
            key = allowance(imp, allowed, package)
            if key:
                used_allowances.add(key)
                continue
            known = edges[name].get(imp.imported)
            if known is None or (known.through and not imp.through):
                edges[name][imp.imported] = imp
    for name in modules:
        if layer_of(name, layers, package) is None:
            problems.append(f"unknown: {name} has no layer: add {short(name, package)!r} to LAYERS in "
                            f"scripts/check_imports.py (or its package)")
    for name in sorted(edges):
        mine = layer_of(name, layers, package)
        for target, imp in sorted(edges[name].items()):
            theirs = layer_of(target, layers, package)
            if imp.through or mine is None or theirs is None or theirs <= mine:
                continue
            where = f"{modules[name].relative_to(src.parent)}:{imp.line}"
            problems.append(f"upward: {name} (layer {mine}) imports {target} (layer {theirs}) at {where}{imp.how()}")
    for cycle in find_cycles(edges):
        steps = [f"{a} -> {b}{edges[a][b].how()}" for a, b in zip(cycle, cycle[1:])]
        problems.append(f"cycle: {' ; '.join(steps)}")
    for key in sorted(set(allowed) - used_allowances):
        notes.append(f"note: ALLOWED lists {key[0]} -> {key[1]}, which no module imports any more: remove it")
    return problems, notes


def modules_loaded_by(module: str, src_parent: Path, package: str = PACKAGE) -> list[str]:
    """The package's modules a fresh interpreter has loaded after `import module`."""
    code = (f"import sys, importlib; importlib.import_module({module!r}); "
            f"print(' '.join(sorted(m for m in sys.modules if m == {package!r} or m.startswith({package + '.'!r}))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=src_parent, capture_output=True, text=True,
                         env={"PYTHONPATH": str(src_parent), "PATH": "/usr/bin:/bin"})
    if out.returncode != 0:
        raise SystemExit(f"import {module} failed:\n{out.stderr}")
    return out.stdout.split()


def main() -> int:
    src = ROOT / "src" / PACKAGE
    problems, notes = check(src)
    for line in problems + notes:
        print(line)
    loaded = modules_loaded_by(f"{PACKAGE}.server", src.parent)
    print(f"import {PACKAGE}.server loads {len(loaded)} {PACKAGE} modules: {' '.join(loaded)}")
    if problems:
        print(f"check_imports: {len(problems)} problem(s); fix them, or for a known one being refactored, "
              f"add its edge to ALLOWED with a comment")
        return 1
    print(f"check_imports: {len(module_names(src, PACKAGE))} modules, no cycle, no upward import "
          f"(besides the {len(ALLOWED)} known ones in ALLOWED)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
