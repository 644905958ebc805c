#!/bin/bash
# Issue 30, builds that are the same wherever they are built, on MariaDB 10.11.18: rel_o2nofp (gcc 12,
# -O2 -fno-omit-frame-pointer) built without ccache in two pgolab homes, the second from a copy of the
# tree at another path; every installed file's sha256 compared (which differ, and the server's loaded
# sha256 too), and the server's digest set beside the one the replicates proof built on an AMD EPYC
# family 25 (../mariadb-10.11-replicates, 2026-11-28) from the tree at the default home's path.
# PROOF_STEPS=build or compare runs one part. About 25-30 minutes with the machine to itself.
# digests-with-dtrace.txt is the first run (pgolab at 5a5619f, DTrace probes on): the two files differed
# in the probe object's debug information and file symbol; pgolab now configures MariaDB without them.
. "$(dirname "$0")/../proof-env.sh"
proof_steps build compare
S=$($P source mariadb --version 10.11.18)
HOME_A=${REPRO_HOME_A:-/var/cache/pgolab-repro-a}
HOME_B=${REPRO_HOME_B:-/var/tmp/pgolab-repro/a/much/deeper/home-b}
S_B=$HOME_B/sources/$(basename "$S")
binary_of() {   # HOME TREE: rel_o2nofp's server binary built in HOME from TREE
  PGOLAB_HOME=$1 $P builds --json | python3 -c 'import json,sys
print(next(r["server_binary"] for r in json.load(sys.stdin) if r["label"] == "rel_o2nofp" and r["source"]["path"] == sys.argv[1]))' "$2"
}
if [[ $STEPS == *" build "* ]]; then
  mkdir -p "$HOME_B/sources"
  [ -d "$S_B" ] || cp -a "$S" "$S_B"
  PGOLAB_HOME=$HOME_A $P build "$S" --variant rel_o2nofp --no-ccache </dev/null > "$OUT/build-a.txt" 2>&1
  PGOLAB_HOME=$HOME_B $P build "$S_B" --variant rel_o2nofp --no-ccache </dev/null > "$OUT/build-b.txt" 2>&1
  PGOLAB_HOME=$HOME_A $P builds --markdown --server mariadb-10.11.18 > "$OUT/builds-a.md"
  PGOLAB_HOME=$HOME_B $P builds --markdown --server mariadb-10.11.18 > "$OUT/builds-b.md"
fi
if [[ $STEPS == *" compare "* ]]; then
  A=$(binary_of "$HOME_A" "$S"); B=$(binary_of "$HOME_B" "$S_B")
  IA=$(dirname "$(dirname "$A")"); IB=$(dirname "$(dirname "$B")")
  loaded() { "$(dirname "$P")/python" -c 'import sys; from pgolab import elf; print((elf.loaded_digest(sys.argv[1]) or "-")[:12])' "$1"; }
  {
    grep -m1 'model name' /proc/cpuinfo; grep -m1 'cpu family' /proc/cpuinfo; grep -m1 '^model\s' /proc/cpuinfo
    echo "tree A: $S (home $HOME_A); tree B: $S_B (home $HOME_B)"
    for b in "$A" "$B"; do echo "$b: file $(sha256sum "$b" | cut -c1-12), loaded $(loaded "$b")"; done
    echo "rel_o2nofp in ../mariadb-10.11-replicates (AMD EPYC family 25): $(sqlite3 docs/results/mariadb-10.11-replicates/results.sqlite \
      "SELECT DISTINCT substr(binary_digest, 1, 12) || ' from a tree of content digest ' || substr(json_extract(description, '$.source.content_digest'), 1, 12) FROM targets WHERE label = 'rel_o2nofp'")"
    echo "the trees' content digests here: $(for h in "$HOME_A" "$HOME_B"; do PGOLAB_HOME=$h $P builds --json | python3 -c 'import json,sys
print(next(r["source"]["content_digest"][:12] for r in json.load(sys.stdin) if r["label"] == "rel_o2nofp"))'; done | tr '\n' ' ')"
    total=0; differ=()
    while read -r f; do
      total=$((total + 1))
      if [ -L "$IA/$f" ]; then [ "$(readlink "$IA/$f")" = "$(readlink "$IB/$f" 2>/dev/null)" ] || differ+=("$f (link)"); continue; fi
      cmp -s "$IA/$f" "$IB/$f" || differ+=("$f")
    done < <(cd "$IA" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
    only_b=$(comm -13 <(cd "$IA" && find . \( -type f -o -type l \) | sort) <(cd "$IB" && find . \( -type f -o -type l \) | sort) | wc -l)
    echo "installed files: $total in A, ${#differ[@]} differ from B's, $only_b only in B"
    for f in "${differ[@]}"; do echo "  differs: $f"; done
  } > "$OUT/digests.txt"
fi
