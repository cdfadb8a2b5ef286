#!/usr/bin/env bash
# Run by `npm test` before the suite: installs and starts what the tests need on a fresh machine, so
# that the README's one test command works anywhere. Each step does nothing when its need is already met.
set -euo pipefail

say() { echo "test prerequisites: $*" >&2; }

# Debian packages the suite needs, installed when missing (as root).
apt_install() {
  if [ "$(id -u)" -ne 0 ]; then
    say "$1 is missing; install Debian's '$2' package (needs root)"
    exit 1
  fi
  say "installing Debian's $2"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}

# The console's browser tests drive Debian's headless Chromium.
if [ ! -x /usr/bin/chromium ]; then apt_install /usr/bin/chromium chromium; fi

# The metrics tests are scraped by Debian's Prometheus server; the deploy kit's alert rules are
# checked by its promtool (the same package), its systemd unit by systemd-analyze.
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then apt_install Prometheus prometheus; fi
if ! command -v systemd-analyze >/dev/null; then apt_install systemd-analyze systemd; fi

# The PostgreSQL store's tests, and the suite's second pass, need a server on 127.0.0.1:5432 that
# lets the user postgres in without a password.
if ! command -v pg_ctlcluster >/dev/null || ! command -v psql >/dev/null; then
  apt_install PostgreSQL postgresql
  # A cluster installed here holds nothing but test databases: local connections are trusted.
  hba="/etc/postgresql/$(ls /etc/postgresql | sort -V | tail -n 1)/main/pg_hba.conf"
  printf 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n' > "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main reload 2>/dev/null || true
fi
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  say "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    say "PostgreSQL did not come up on 127.0.0.1:5432; see /var/log/postgresql/"
    exit 1
  fi
fi
if ! psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
  say "PostgreSQL on 127.0.0.1:5432 does not let the user postgres in without a password; the tests need trust authentication for 127.0.0.1"
  exit 1
fi

# Redis on 127.0.0.1:6379, for the limits and change-notification tests (each keeps to its own key
# prefix; SLUICE_TEST_REDIS_URL names another), started without persistence when none answers.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  apt_install Redis redis-server
fi
if [ -z "${SLUICE_TEST_REDIS_URL:-}" ] && ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  say "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.2; done
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    say "Redis did not come up on 127.0.0.1:6379"
    exit 1
  fi
fi


# The clients, agent CLIs and tools the suite drives live in test/ with a lock file of their own, so that
# the gateway's own `npm ci` installs only the gateway. Installed again only when that lock file changes.
stamp=test/node_modules/.installed-from-lock
wanted="$(sha256sum test/package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  say "installing the test clients (test/package-lock.json)"
  npm --prefix test ci --no-audit --no-fund --loglevel=error
  echo "$wanted" > "$stamp"
fi
