#!/usr/bin/env bash
# dbt with the duckdb adapter: see .ci/dbt-adapter.sh.
exec "$(dirname "$0")/dbt-adapter.sh" duckdb "$@"
