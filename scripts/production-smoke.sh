#!/usr/bin/env bash
# scripts/production-smoke.sh [BRANCH]: the production build, proven as an operator meets it, in
# fresh clones of this repository's committed BRANCH (default: the one checked out). Minutes, so
# not part of npm test (deploy/deploy.test.ts checks the deployment files in a second).
#
#  1. clone, then scripts/production-build.sh (npm ci, npm run build, npm prune --omit=dev): the
#     image's build stage, outside a container; no development tool may be left in node_modules;
#  2. on plain node, with a database and a Redis prefix of its own: `npx sluice --help`,
#     `npx sluice migrate` (applies; again: up to date; `--check`), a policy published,
#     `npm run start:decision` (/readyz, a decision, SIGTERM drains), `npm run start` (/login and
#     its stylesheet), `npm run start:worker` (puts back the live policy deleted from Redis), and
#     `npx sluice migrate` refusing a database newer than the code;
#  3. another clone: `npm ci --omit=dev` on its own.
#
# Needs git, curl, psql and redis-cli; DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test)
# names the server the database is created on, REDIS_URL (default redis://127.0.0.1:6379) the Redis.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
branch="${1:-$(git -C "$repo" rev-parse --abbrev-ref HEAD)}"
base_url="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}"
redis_url="${REDIS_URL:-redis://127.0.0.1:6379}"
work="$(mktemp -d)"
db="sluice_smoke_$(date +%s)_$RANDOM"
prefix="smoke$RANDOM:"
groups=()
passed=0

step() { printf '\n== %s\n' "$*"; }
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
cleanup() {
  for group in "${groups[@]}"; do kill -TERM -- "-$group" 2>/dev/null || true; done
  psql "$base_url" -qc "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 || true
  redis-cli -u "$redis_url" --scan --pattern "$prefix*" | xargs -r redis-cli -u "$redis_url" del >/dev/null || true
  if [ "$passed" = 1 ]; then rm -rf "$work"; else echo "(logs and clones kept in $work)"; fi
}
trap cleanup EXIT

# Starts a command in a process group of its own (so cleanup reaches whatever it starts), logging to $work/$1.log.
start() {
  local name="$1"
  shift
  setsid "$@" >"$work/$name.log" 2>&1 &
  groups+=("$!")
}
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
# wait_until SECONDS COMMAND...: polls COMMAND every half second.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}
http_ok() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ]; }
live_policy_is() { [ "$(redis-cli -u "$redis_url" get "${prefix}{policy}:current")" = "$1" ]; }

step "clone $branch into $work/app"
git clone -q --branch "$branch" "$repo" "$work/app"
cd "$work/app"

step "the image's build stage: scripts/production-build.sh"
bash scripts/production-build.sh

step "no development tool is left in node_modules"
# prisma and typescript stay: @prisma/client names them as optional peers, and npm keeps an
# installed optional peer of a production dependency (docs/production.md). Nothing runs them.
for tool in tsx esbuild vitest eslint fastify; do
  [ ! -e "node_modules/$tool" ] || fail "node_modules/$tool is still installed after npm prune --omit=dev"
done
echo "none of tsx, esbuild, vitest, eslint, fastify; node_modules is $(du -sh node_modules | cut -f1)"

db_url="$(node -e 'const u=new URL(process.argv[1]);u.pathname="/"+process.argv[2];console.log(u.href)' "$base_url" "$db")"
psql "$base_url" -qc "CREATE DATABASE \"$db\""
control_port="$(free_port)"
decision_port="$(free_port)"
grpc_port="$(free_port)"
export DATABASE_URL="$db_url" REDIS_URL="$redis_url" SLUICE_REDIS_PREFIX="$prefix" NODE_ENV=production
export NEXTAUTH_SECRET="smoke-only-secret-0123456789abcdef" NEXTAUTH_URL="http://127.0.0.1:$control_port"

step "npx sluice --help, npx sluice migrate"
npx sluice --help | grep -q "^  migrate " || fail "sluice --help lists no migrate command"
npx sluice migrate | tee "$work/migrate.log"
grep -q "migration(s) applied" "$work/migrate.log" || fail "sluice migrate applied nothing to an empty database"
npx sluice migrate | grep -q "up to date" || fail "a second sluice migrate did not find the database up to date"
npx sluice migrate --check

step "a published policy and a service token"
npx sluice apply -f examples/demo-policy.yaml | tail -1
npx sluice publish
token="$(npx sluice tokens create --kind service --name smoke | tail -1)"

step "npm run start:decision"
start decision env DECISION_PORT="$decision_port" SLUICE_GRPC_PORT="$grpc_port" SLUICE_DECISION_PROCESSES=2 npm run start:decision
wait_until 90 http_ok "http://127.0.0.1:$decision_port/readyz" || fail "no /readyz 200 within 90 s: $(tail -5 "$work/decision.log")"
curl -s "http://127.0.0.1:$decision_port/readyz"
echo
answer="$(curl -s "http://127.0.0.1:$decision_port/v1/check" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
  -d '{"key":"sk_test_acme_ci_0001","operation":"GET /v1/orders/42","ip":"203.0.113.7"}')"
echo "$answer" | cut -c1-160
echo "$answer" | grep -q '"allowed":true' || fail "the decision was not allowed: $answer"

step "npm run start (the control plane)"
start control-plane env PORT="$control_port" npm run start
wait_until 90 http_ok "http://127.0.0.1:$control_port/login" || fail "no /login 200 within 90 s: $(tail -5 "$work/control-plane.log")"
stylesheet="$(curl -s "http://127.0.0.1:$control_port/login" | grep -o '/_next/static/[^"]*\.css' | head -1)"
[ -n "$stylesheet" ] && http_ok "http://127.0.0.1:$control_port$stylesheet" || fail "/login's stylesheet ($stylesheet) is not served"
echo "/login 200, $stylesheet 200"

step "npm run start:worker"
start worker npm run start:worker
wait_until 60 grep -q "worker started" "$work/worker.log" || fail "the worker did not start: $(tail -5 "$work/worker.log")"
redis-cli -u "$redis_url" del "${prefix}{policy}:current" >/dev/null
wait_until 30 live_policy_is 1 || fail "the worker did not put back the deleted live policy"
echo "the worker put back the live policy deleted from Redis"

step "SIGTERM: the decision server drains and exits"
kill -TERM -- "-${groups[0]}"
wait_until 40 grep -q "SIGTERM: draining" "$work/decision.log" || fail "the decision server did not drain on SIGTERM"
wait_until 40 sh -c "! curl -s -o /dev/null http://127.0.0.1:$decision_port/healthz" || fail "the decision server still answers 40 s after SIGTERM"
echo "drained and gone"

step "npx sluice migrate refuses a database newer than the code"
psql "$db_url" -qc "INSERT INTO \"_prisma_migrations\" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
  VALUES ('00000000-0000-4000-8000-000000000031', repeat('0', 64), '99990101000000_next_release', now(), now(), 1)"
if npx sluice migrate 2>"$work/refused.log"; then fail "sluice migrate accepted a database newer than the code"; fi
cat "$work/refused.log"
grep -q "newer than this code" "$work/refused.log" || fail "sluice migrate refused without saying why"

step "npm ci --omit=dev in another clone"
git clone -q --branch "$branch" "$repo" "$work/omit-dev"
(cd "$work/omit-dev" && npm ci --omit=dev --no-audit --no-fund)
[ ! -e "$work/omit-dev/node_modules/tsx" ] || fail "npm ci --omit=dev installed tsx"
passed=1

printf '\nproduction smoke: every step passed\n'
