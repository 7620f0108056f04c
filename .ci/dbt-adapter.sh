#!/usr/bin/env bash
# dbt with one warehouse adapter, for the init tests of that warehouse:
#   .ci/dbt-adapter.sh duckdb      tests/init_duckdb.rs: dbt-duckdb, and the duckdb Python
#                                  package pinned to the library .ci/duckdb.sh installs, so
#                                  the file dbt builds is one the warehouse's library reads
#   .ci/dbt-adapter.sh snowflake   tests/init_snowflake.rs: dbt-snowflake, built against
#                                  fakesnow's server (.ci/snowflake.sh's venv); the test
#                                  loads its source with this venv's snowflake-connector
# A venv at /opt/dataward/dbt-ADAPTER (or $DATAWARD_DBT_ADAPTER_VENV, upper case) with
# dbt-core and the adapter from PyPI, each a venv of its own so the other dbt venvs are
# not changed. Every package is pinned: dbt's own by .ci/dbt-constraints.txt (the same
# dbt-core as .ci/dbt.sh), the adapter's by .ci/dbt-ADAPTER-constraints.txt.
# Idempotent: a venv that already has these versions is left alone; anything else there
# is rebuilt. Run as root with Python 3.9 or later.
set -euo pipefail
cd "$(dirname "$0")"

ADAPTER="${1:?usage: .ci/dbt-adapter.sh duckdb|snowflake}"
DBT_CORE=1.11.16
case "$ADAPTER" in
  duckdb) PINS=("dbt-core==$DBT_CORE" "dbt-duckdb==1.11.1" "duckdb==1.5.6") ;;
  snowflake) PINS=("dbt-core==$DBT_CORE" "dbt-snowflake==1.12.4") ;;
  *) echo "dbt-adapter.sh: no adapter $ADAPTER (duckdb or snowflake)" >&2; exit 2 ;;
esac
VARIABLE="DATAWARD_DBT_${ADAPTER^^}_VENV"
VENV="${!VARIABLE:-/opt/dataward/dbt-$ADAPTER}"

installed() {
  "$VENV/bin/python" - "${PINS[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(n) == v for n, v in (p.split("==") for p in sys.argv[1:])) else 1)
PY
}

if [ -x "$VENV/bin/dbt" ] && installed; then
  echo "${PINS[*]} already in $VENV"
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
[ -n "$PYTHON" ] || { echo "dbt-adapter.sh: needs Python 3.9 or later" >&2; exit 1; }

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
  --constraint "$PWD/dbt-constraints.txt" --constraint "$PWD/dbt-$ADAPTER-constraints.txt" \
  "${PINS[@]}"
installed || { echo "dbt-adapter.sh: $VENV does not hold the pinned versions" >&2; exit 1; }
echo "${PINS[*]} installed in $VENV"
