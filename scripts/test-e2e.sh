#!/usr/bin/env bash
# The end-to-end layer: every file against the real gateway on SQLite, then again on PostgreSQL for
# the files whose outcome can depend on the store (test/support/postgres-pass.ts says which). Files
# run in parallel: each test has its own ports, data directory, database and Redis prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
concurrency="${SLUICE_TEST_CONCURRENCY:-3}"
node --import tsx --test --test-concurrency="$concurrency" test/*.test.ts
list="$(node --import tsx test/support/postgres-pass.ts)"
mapfile -t postgres <<< "$list"
SLUICE_TEST_STORE=postgres node --import tsx --test --test-concurrency="$concurrency" "${postgres[@]}"
