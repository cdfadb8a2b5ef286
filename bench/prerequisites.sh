#!/usr/bin/env bash
# Run by `npm run bench` first: nginx (the plain-proxy baseline the targets are measured against) and
# wrk (the closed-loop load generator) from Debian's packages, installed when missing (as root).
set -euo pipefail

say() { echo "bench prerequisites: $*" >&2; }

missing=()
[ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v wrk >/dev/null || missing+=(wrk)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  say "missing: ${missing[*]}; install Debian's packages (needs root), or the bench runs without nginx and falls back to autocannon"
  exit 0
fi
nginx_was_running=$(pgrep -x nginx >/dev/null && echo yes || echo no)
say "installing Debian's ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
# The package may start its own nginx on port 80; the bench starts its own, with its own configuration.
if [ "$nginx_was_running" = no ] && pgrep -x nginx >/dev/null; then /usr/sbin/nginx -s stop 2>/dev/null || true; fi
