#!/usr/bin/env bash
# DuckDB's shared library, whose ADBC entrypoint (duckdb_adbc_init) the DuckDB warehouse
# loads, for tests/duckdb.rs: libduckdb.so from npm's prebuilt @duckdb/node-bindings
# package (pinned, checked by hash; DuckDB built from source takes about 45 minutes on
# this machine), and an ADBC driver manifest beside it, so the tests find the driver the
# way a user's install does (ADBC_DRIVER_PATH=/opt/dataward/duckdb, name "duckdb").
# Installs into /opt/dataward/duckdb (or $DATAWARD_DUCKDB_DIR). Idempotent: a library
# with the pinned hash is left alone. Run as root on Linux x86-64 with npm.
set -euo pipefail

VERSION=1.5.6
PACKAGE="@duckdb/node-bindings-linux-x64@$VERSION-r.1"
TARBALL_SHA256=1b9f82478539bb9a1d1df44bd103121a12ae52142c07158dc52b97d2ec1d69ff
DIR="${DATAWARD_DUCKDB_DIR:-/opt/dataward/duckdb}"
STAMP="$DIR/installed-from"

if [ -f "$DIR/libduckdb.so" ] && [ -f "$DIR/duckdb.toml" ] &&
   [ "$(cat "$STAMP" 2>/dev/null)" = "$PACKAGE $TARBALL_SHA256" ]; then
  echo "DuckDB $VERSION already in $DIR"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq npm
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tarball="$(ls "$work"/*.tgz)"
echo "$TARBALL_SHA256  $tarball" | sha256sum --check --quiet -
tar -xzf "$tarball" -C "$work" package/libduckdb.so package/LICENSE

mkdir -p "$DIR"
install -m 0644 "$work/package/libduckdb.so" "$DIR/libduckdb.so"
install -m 0644 "$work/package/LICENSE" "$DIR/LICENSE"
cat > "$DIR/duckdb.toml" <<TOML
manifest_version = 1
name = "DuckDB"
version = "$VERSION"
source = "npm $PACKAGE"

[Driver]
entrypoint = "duckdb_adbc_init"

[Driver.shared]
linux_amd64 = "$DIR/libduckdb.so"
TOML
echo "$PACKAGE $TARBALL_SHA256" > "$STAMP"
echo "DuckDB $VERSION installed in $DIR"
