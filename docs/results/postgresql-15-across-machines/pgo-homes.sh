#!/bin/bash
# Why the PGO build here is not the Intel Xeon's binary, and that it is now one binary in two homes.
# PostgreSQL 15.18's rel_lto_pgo_use_clang from the committed Debian-tree profile, built in pgolab's
# home and in a second one; each binary's sha256 and any string in it naming a home. Run after run.sh's
# build step (the first home's build is then up to date). With OLD=COMMIT, the same two builds at that
# commit's code too (a worktree; the second home's build of the current code is removed first, as the
# two share the folder name), which is how the recorded-path cause was found on 2026-11-28 (ab81fb4).
. "$(dirname "$0")/../proof-env.sh"
S=$($P source postgresql --version 15)
PROFILE=docs/results/postgresql-15-stale-profile/debian-tree.profile.tgz
H1=${PGOLAB_HOME:-/var/cache/pgolab}
H2=$H1-second-home
report() {   # HOME
  local b=$(ls "$1"/builds/postgresql-15.18-*/rel_lto_pgo_use_clang/final/install/bin/postgres)
  echo "$1: sha256 $(sha256sum "$b" | cut -c1-12), strings naming a home: $(strings -n 8 "$b" | grep -c "$1" || true)"
  strings -n 8 "$b" | grep -o -- "-fprofile-use=[^ ]*" | sort -u | sed 's/^/  recorded: /'
}
build_in() {   # HOME PGOLAB
  PGOLAB_HOME=$1 $2 build "$S" --variant rel_lto_pgo_use_clang --profile "$PROFILE" --no-smoke </dev/null >/dev/null 2>&1
}
echo "code: $(git log --oneline -1 | cut -c1-60)"
build_in "$H1" "$P"; report "$H1"
build_in "$H2" "$P"; report "$H2"
if [ -n "${OLD:-}" ]; then
  W=$(mktemp -d); git worktree add -f -q "$W" "$OLD"
  OLDP="env PYTHONPATH=$W/src $(dirname "$P")/python -m pgolab"
  for h in "$H1-old-code" "$H2-old-code"; do
    rm -rf "$h"/builds/postgresql-15.18-*/rel_lto_pgo_use_clang
    build_in "$h" "$OLDP"; echo "code $OLD:"; report "$h"
  done
  git worktree remove -f "$W"
fi
