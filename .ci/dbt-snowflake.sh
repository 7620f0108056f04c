#!/usr/bin/env bash
# dbt with the Snowflake adapter for tests/init_snowflake.rs: a venv at
# /opt/dataward/dbt-snowflake (or $DATAWARD_DBT_SNOWFLAKE_VENV) with dbt-core and
# dbt-snowflake from PyPI. The test builds its project with this dbt against fakesnow's
# server (from .ci/snowflake.sh's venv), and loads the source with this venv's
# snowflake-connector-python. Every package is pinned: dbt's own by
# .ci/dbt-constraints.txt (the same dbt-core as .ci/dbt.sh), the adapter and its
# dependencies by .ci/dbt-snowflake-constraints.txt. A venv of its own, so the other dbt
# venvs are not changed. Idempotent: a venv that already has these versions is left
# alone; anything else there is rebuilt. Run as root with Python 3.9 or later.
set -euo pipefail
cd "$(dirname "$0")"

DBT_CORE=1.11.16
DBT_SNOWFLAKE=1.12.4
VENV="${DATAWARD_DBT_SNOWFLAKE_VENV:-/opt/dataward/dbt-snowflake}"

installed() {
  "$VENV/bin/python" - "$DBT_CORE" "$DBT_SNOWFLAKE" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
found = (version("dbt-core"), version("dbt-snowflake"))
sys.exit(0 if found == tuple(sys.argv[1:3]) else 1)
PY
}

if [ -x "$VENV/bin/dbt" ] && installed; then
  echo "dbt-core $DBT_CORE with dbt-snowflake $DBT_SNOWFLAKE already in $VENV"
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
[ -n "$PYTHON" ] || { echo "dbt-snowflake.sh: needs Python 3.9 or later" >&2; exit 1; }

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
  --constraint "$PWD/dbt-constraints.txt" --constraint "$PWD/dbt-snowflake-constraints.txt" \
  "dbt-core==$DBT_CORE" "dbt-snowflake==$DBT_SNOWFLAKE"
installed || { echo "dbt-snowflake.sh: $VENV does not hold the pinned versions" >&2; exit 1; }
echo "dbt-core $DBT_CORE with dbt-snowflake $DBT_SNOWFLAKE installed in $VENV"
