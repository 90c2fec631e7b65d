#!/usr/bin/env bash
# `npm test`: everything, in the order that fails fastest. Each stage prints its own summary;
# the last line is the overall count.
set -euo pipefail
cd "$(dirname "$0")/.."

export DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export NEXT_TELEMETRY_DISABLED=1

echo "== typecheck"; npx tsc --noEmit -p .
echo "== lint"; npx eslint . --max-warnings=0
echo "== unit"; npx vitest run --project unit
echo "== integration (real PostgreSQL and Redis)"; npx vitest run --project int
echo "== e2e (Playwright, Chromium)"; npx playwright test
