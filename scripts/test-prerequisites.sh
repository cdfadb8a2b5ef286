#!/usr/bin/env bash
# Run by `npm test` before the suite: installs what the tests need on a fresh machine, so that the
# README's one test command works anywhere. Each step does nothing when its need is already met.
set -euo pipefail

# The console's browser tests drive Debian's headless Chromium.
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test prerequisites: /usr/bin/chromium is missing; install Debian's 'chromium' package (needs root)" >&2
    exit 1
  fi
  echo "test prerequisites: installing Debian's chromium" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
