#!/usr/bin/env bash
# CI: a venv holding Apache Airflow for tests/airflow.rs, which starts a real Airflow 3
# from it (api-server, scheduler and dag-processor on 127.0.0.1, SQLite metadata).
# Idempotent: does nothing when the venv already holds exactly these pins. Needs
# python3.11 (the pins were resolved for it) and PyPI. Run as root.
#
#   AIRFLOW_VENV   where the venv goes (default /opt/dataward/airflow; the tests read
#                  DATAWARD_AIRFLOW_VENV, same default)
#   PYTHON         the interpreter (default python3.11, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${AIRFLOW_VENV:-/opt/dataward/airflow}"
version=3.1.3
# Its OpenLineage provider, for the events tests/fixtures/openlineage/ recorded from it.
openlineage_provider=2.9.0
constraints=.ci/airflow-constraints.txt
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
case "$venv" in
  /?*/?*) ;;
  *) echo "airflow.sh: AIRFLOW_VENV must be an absolute path below a folder, not '$venv'" >&2; exit 2 ;;
esac
stamp="$venv/.dataward-pins"
want="$version $openlineage_provider $(sha256sum "$constraints" | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
  && "$venv/bin/python" -c 'import airflow' >/dev/null 2>&1; then
  echo "airflow.sh: $venv already holds apache-airflow $version with the pinned set"
  exit 0
fi

# Built afresh, never patched in place, so nothing of another install lingers (a venv
# cannot be built elsewhere and moved: its scripts name its path). The stamp is written
# last: an interrupted run leaves none, and the next run builds again.
"$python" -c 'import sys; assert sys.version_info >= (3, 10), sys.version'
# Debian's python3 makes venvs only with its venv package (ensurepip) installed.
if ! "$python" -c 'import ensurepip' >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3-venv
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --no-input --disable-pip-version-check \
  --constraint "$constraints" "apache-airflow==$version" \
  "apache-airflow-providers-openlineage==$openlineage_provider"
"$venv/bin/pip" check
echo "$want" > "$stamp"
"$venv/bin/airflow" version >/dev/null
echo "airflow.sh: apache-airflow $version installed in $venv"
