#!/usr/bin/env bash
# CI: a venv for the Snowflake tests, at /opt/dataward/snowflake (or $SNOWFLAKE_VENV):
#   - adbc-driver-snowflake: its wheel holds the ADBC Snowflake driver, the Go
#     driver's shared library (adbc_driver_snowflake/libadbc_driver_snowflake.so), which
#     dataward loads through ADBC; nothing of the Python package is used;
#   - fakesnow with its server (`fakesnow -s --host 127.0.0.1 -p PORT`): Snowflake's
#     HTTP protocol on loopback, DuckDB underneath. It needs snowflake-connector-python
#     below 5.
# Every package pinned by .ci/snowflake-constraints.txt. Idempotent: does nothing when
# the venv already holds exactly these pins. Needs Python 3.10 or later and PyPI. Run
# as root. Prints where the driver library is.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${SNOWFLAKE_VENV:-/opt/dataward/snowflake}"
driver_version=1.11.0
fakesnow_version=0.12.1
constraints=.ci/snowflake-constraints.txt
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
case "$venv" in
  /?*/?*) ;;
  *) echo "snowflake.sh: SNOWFLAKE_VENV must be an absolute path below a folder, not '$venv'" >&2; exit 2 ;;
esac
stamp="$venv/.dataward-pins"
want="$driver_version $fakesnow_version $(sha256sum "$constraints" | cut -d' ' -f1)"
library="$venv/lib/python3*/site-packages/adbc_driver_snowflake/libadbc_driver_snowflake.so"

# shellcheck disable=SC2086 # $library is a glob on purpose
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/fakesnow" ] \
  && ls $library >/dev/null 2>&1; then
  echo "snowflake.sh: $venv already holds adbc-driver-snowflake $driver_version and fakesnow $fakesnow_version"
  ls $library
  exit 0
fi

# Built afresh, never patched in place, so nothing of another install lingers. The
# stamp is written last: an interrupted run leaves none, and the next run builds again.
"$python" -c 'import sys; assert sys.version_info >= (3, 10), sys.version'
# Debian's python3 makes venvs only with its venv package (ensurepip) installed.
if ! "$python" -c 'import ensurepip' >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq python3-venv
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --no-input --disable-pip-version-check \
  --constraint "$constraints" \
  "adbc-driver-snowflake==$driver_version" "fakesnow[server]==$fakesnow_version"
"$venv/bin/pip" check
# shellcheck disable=SC2086
ls $library >/dev/null
"$venv/bin/fakesnow" --help >/dev/null
echo "$want" > "$stamp"
echo "snowflake.sh: adbc-driver-snowflake $driver_version and fakesnow $fakesnow_version installed in $venv"
# shellcheck disable=SC2086
ls $library
