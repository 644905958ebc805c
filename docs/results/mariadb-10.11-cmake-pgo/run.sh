#!/bin/bash
# Issue 33, MariaDB's wish literally: `cmake -DWITH_PGO=ON <tree> && cmake --build . && cmake --install .`
# on MariaDB 10.11 (Debian 12's tree), clang-16, with the module `pgolab cmake-module` writes. The build
# is the user's (plain cmake, no pgolab build); pgolab runs inside it, as its train and verify steps.
# The options given are the user's choice here: pgolab's own MariaDB options (plugins this proof does
# not need left out), so that the whole optimized build fits a session. Resumable: ninja resumes.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb)
HERE=${PGOLAB_HOME:-/var/cache/pgolab}/cmake-pgo
TREE=$HERE/mariadb-tree     # a copy: the module writes into the tree, and pgolab's builds of it keep their digest
if [ ! -f "$TREE/.copied" ]; then
  rm -rf "$TREE" && mkdir -p "$HERE" && cp -a "$S" "$TREE" && touch "$TREE/.copied"
fi
$P cmake-module "$TREE" > "$OUT/cmake-module.txt" 2>&1
OPTIONS=$("$(dirname "$P")/python" -c 'from pgolab.targets.mariadb import MARIADB_CMAKE_OPTIONS as o; print(" ".join(f"-D{k}={v}" for k, v in o.items()))')
mkdir -p "$HERE/build"
{ echo "\$ CC=clang-16 CXX=clang++-16 cmake -G Ninja -DWITH_PGO=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo $OPTIONS -S $TREE -B $HERE/build"
  CC=clang-16 CXX=clang++-16 cmake -G Ninja -DWITH_PGO=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo $OPTIONS -S "$TREE" -B "$HERE/build"; } \
  > "$OUT/configure.txt" 2>&1
# The whole build's output stays beside the build; the proof keeps pgolab's steps and the timing.
/usr/bin/time -v cmake --build "$HERE/build" > "$HERE/build.log" 2>&1
grep -E '^\[[0-9]+/[0-9]+\] (pgolab|Performing|Completed)|profile used|server answered|^training |removed|^profile:|compile the optimized|-fprofile-use=|Elapsed|Maximum resident|User time|System time|Exit status|Error|Traceback' \
  "$HERE/build.log" > "$OUT/build-steps.txt" || true
rm -rf "$HERE/staged"
DESTDIR=$HERE/staged cmake --install "$HERE/build" > "$HERE/install.log" 2>&1
INSTALLED=$(find "$HERE/staged" -name mariadbd -type f | head -1)
{ echo "installed: ${INSTALLED#$HERE/staged}"
  echo "sha256 installed: $(sha256sum < "$INSTALLED" | cut -c1-64)"
  echo "sha256 built:     $(sha256sum < "$HERE/build/pgo/optimized/sql/mariadbd" | cut -c1-64)"
  echo "installed files: $(find "$HERE/staged" -type f | wc -l)"
  "$INSTALLED" --version; } > "$OUT/install.txt"
$P verify --binary "$HERE/build/pgo/optimized/sql/mariadbd" > "$OUT/verify.txt" 2>&1
