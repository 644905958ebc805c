#!/bin/bash
# The PGO-related flags of sql/sql_parse.cc's compile command in each configured MySQL 9.7.2 build
# (configured by tests/test_mysql.py at 9a831a9 into /var/cache/pgolab; output in pgo-options-flags.txt).
for v in rel_pgo_use rel_o2nofp_native_lto_pgo_gen rel_pgo_use_clang; do
  echo "== $v"
  python3 -c "
import json, sys
cmds = json.load(open(sys.argv[1]))
argv = next(c['command'] for c in cmds if c['file'].endswith('sql/sql_parse.cc')).split()
print(' '.join(a for a in argv if a.startswith(('-fprofile', '-flto', '-O', '-fno-omit', '-march', '-mtune',
                                               '-ftest-coverage', '-fdebug-prefix-map', '-Wno-missing-profile',
                                               '-Wno-error=coverage'))))
" /var/cache/pgolab/builds/mysql-9.7.2-e4b15c3d03/$v/final/build/compile_commands.json
done
