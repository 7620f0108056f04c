#!/usr/bin/env bash
# dbt with the DuckDB adapter for tests/init_duckdb.rs: a venv at /opt/dataward/dbt-duckdb
# (or $DATAWARD_DBT_DUCKDB_VENV) with dbt-core and dbt-duckdb from PyPI. Every package is
# pinned: dbt's own by .ci/dbt-constraints.txt (the same dbt-core as .ci/dbt.sh), the
# adapter and the duckdb Python package by .ci/dbt-duckdb-constraints.txt. duckdb is
# pinned to the version of the library .ci/duckdb.sh installs, so the file dbt builds is
# one the warehouse's library reads. A venv of its own, so the dbt-postgres venv the
# other tests use is not changed. Idempotent: a venv that already has these versions is
# left alone; anything else there is rebuilt. Run as root with Python 3.9 or later.
set -euo pipefail
cd "$(dirname "$0")"

DBT_CORE=1.11.16
DBT_DUCKDB=1.11.1
DUCKDB=1.5.6
VENV="${DATAWARD_DBT_DUCKDB_VENV:-/opt/dataward/dbt-duckdb}"

installed() {
  "$VENV/bin/python" - "$DBT_CORE" "$DBT_DUCKDB" "$DUCKDB" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
found = (version("dbt-core"), version("dbt-duckdb"), version("duckdb"))
sys.exit(0 if found == tuple(sys.argv[1:4]) else 1)
PY
}

if [ -x "$VENV/bin/dbt" ] && installed; then
  echo "dbt-core $DBT_CORE with dbt-duckdb $DBT_DUCKDB (duckdb $DUCKDB) already in $VENV"
  exit 0
fi

PYTHON=""
for candidate in python3.11 python3.12 python3.13 python3; do
  if command -v "$candidate" >/dev/null 2>&1 &&
     "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
    PYTHON="$candidate"
    break
  fi
done
[ -n "$PYTHON" ] || { echo "dbt-duckdb.sh: needs Python 3.9 or later" >&2; exit 1; }

# Debian's own Python keeps venv's ensurepip in a package of its own.
if ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  minor="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  apt-get update -qq
  apt-get install -y -qq "python$minor-venv" || apt-get install -y -qq python3-venv
fi

rm -rf "$VENV"
mkdir -p "$(dirname "$VENV")"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  --constraint "$PWD/dbt-constraints.txt" --constraint "$PWD/dbt-duckdb-constraints.txt" \
  "dbt-core==$DBT_CORE" "dbt-duckdb==$DBT_DUCKDB" "duckdb==$DUCKDB"
installed || { echo "dbt-duckdb.sh: $VENV does not hold the pinned versions" >&2; exit 1; }
echo "dbt-core $DBT_CORE with dbt-duckdb $DBT_DUCKDB (duckdb $DUCKDB) installed in $VENV"
