#!/usr/bin/env bash
# dbt with the snowflake adapter: see .ci/dbt-adapter.sh.
exec "$(dirname "$0")/dbt-adapter.sh" snowflake "$@"
