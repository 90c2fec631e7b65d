#!/usr/bin/env bash
# `npm test`: everything, in the order that fails fastest. Each stage prints its own summary;
# the last line is the overall count.
set -euo pipefail
cd "$(dirname "$0")/.."

export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export NEXT_TELEMETRY_DISABLED=1
# Debian puts nginx and rabbitmq-server in /usr/sbin, which a non-login shell may not have on PATH.
case ":$PATH:" in *:/usr/sbin:*) ;; *) export PATH="$PATH:/usr/sbin" ;; esac

# Chromium, nginx, wrk, redis-server, and PostgreSQL, Redis and RabbitMQ answering: installed and
# started as root on Debian, else a stop here with the command to run (scripts/preflight.sh).
# Each stage's wall time, so a run that creeps past its budget (25 minutes on CI) says where.
stage() { echo "== $1 ($((SECONDS / 60))m$((SECONDS % 60))s so far)"; }
stage preflight; bash scripts/preflight.sh
# Playwright drives the Chromium the preflight found.
export CHROMIUM_PATH="${CHROMIUM_PATH:-$(command -v chromium)}"

stage "typecheck"; npx tsc --noEmit -p .
# Checked: the browser tests' `next build` need not check again (next.config.ts).
export SLUICE_TYPECHECKED=1
stage "lint"; npx eslint . --max-warnings=0
stage "unit"; npx vitest run --project unit
stage "integration (real PostgreSQL and Redis)"; npx vitest run --project int
stage "e2e (Playwright, Chromium)"; npx playwright test
stage "done"
