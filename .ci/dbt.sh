#!/usr/bin/env bash
# dbt Core for the dbt_core orchestrator's tests (tests/dbt_core.rs): a venv at
# /opt/dataward/dbt (or $DATAWARD_DBT_VENV) with dbt-core and dbt-postgres from PyPI, and
# openlineage-dbt's `dbt-ol` for tests/openlineage_in.rs,
# every package pinned by .ci/dbt-constraints.txt. Idempotent: a venv that already
# has these versions is left alone; anything else there is rebuilt. Run as root on a
# Debian machine with Python 3.11 (3.9 or later works) and pip.
set -euo pipefail
cd "$(dirname "$0")"

DBT_CORE=1.11.16
DBT_POSTGRES=1.11.0
OPENLINEAGE_DBT=1.54.0
VENV="${DATAWARD_DBT_VENV:-/opt/dataward/dbt}"
CONSTRAINTS="$PWD/dbt-constraints.txt"

installed() {
  "$VENV/bin/python" - "$DBT_CORE" "$DBT_POSTGRES" "$OPENLINEAGE_DBT" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
wanted = tuple(sys.argv[1:4])
sys.exit(0 if (version("dbt-core"), version("dbt-postgres"), version("openlineage-dbt")) == wanted else 1)
PY
}

if [ -x "$VENV/bin/dbt" ] && [ -x "$VENV/bin/dbt-ol" ] && installed; then
  echo "dbt-core $DBT_CORE with dbt-postgres $DBT_POSTGRES and openlineage-dbt $OPENLINEAGE_DBT already in $VENV"
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
[ -n "$PYTHON" ] || { echo "dbt.sh: needs Python 3.9 or later" >&2; exit 1; }

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
  --constraint "$CONSTRAINTS" "dbt-core==$DBT_CORE" "dbt-postgres==$DBT_POSTGRES" \
  "openlineage-dbt==$OPENLINEAGE_DBT"
installed || { echo "dbt.sh: $VENV does not hold the pinned versions" >&2; exit 1; }
echo "dbt-core $DBT_CORE with dbt-postgres $DBT_POSTGRES and openlineage-dbt $OPENLINEAGE_DBT installed in $VENV"
