#!/usr/bin/env bash
# What the test suite needs from the machine, checked before anything else runs, so a fresh
# machine fails in the first second with what to do instead of deep inside a browser test.
# Run by `npm test` (scripts/test.sh) and therefore by `.ci/run`; safe to run again and again.
#
# Needs, on PATH (scripts/test.sh adds /usr/sbin, where Debian puts nginx and rabbitmq-server):
# Chromium (CHROMIUM_PATH, else `chromium`, for Playwright), nginx (the gateway snippet's
# test), wrk and h2load (the benchmarks: HTTP and the gRPC rate limit service), redis-server and redis-cli (tests start their own servers and a
# Redis Cluster), nats-server (tests of shared limits start their own), and answering: PostgreSQL at
# DATABASE_URL, Redis at REDIS_URL, RabbitMQ at AMQP_URL, NATS with JetStream at NATS_URL (defaults:
# the machine's own, as in docs/testing.md).
#
# As root on Debian (apt-get present) it installs what is missing (apt-get update first, retried)
# and starts the local services that do not answer, with the same commands as this project's
# machines. Anywhere else it changes nothing: it lists what is missing, prints the one command
# that fixes it, and exits 1.
set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/test}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
AMQP_URL="${AMQP_URL:-amqp://guest:guest@127.0.0.1:5672}"
NATS_URL="${NATS_URL:-nats://127.0.0.1:4222}"
# How long a service that was just started may take to answer (RabbitMQ needs ~10 s).
wait_s="${SLUICE_PREFLIGHT_WAIT_S:-60}"

say() { echo "== preflight: $*"; }
has() { command -v "$1" >/dev/null 2>&1; }

# host and port of a URL (scheme://[user[:pass]@]host[:port]/…); IPv6 hosts in brackets.
url_host() { local rest="${1#*://}"; rest="${rest%%/*}"; rest="${rest##*@}"
  if [[ $rest == \[* ]]; then rest="${rest#[}"; echo "${rest%%]*}"; else echo "${rest%%:*}"; fi; }
url_port() { local rest="${1#*://}"; rest="${rest%%/*}"; rest="${rest##*@}"; rest="${rest##*]}"
  if [[ $rest == *:* ]]; then echo "${rest##*:}"; else echo "$2"; fi; }
is_local() { case "$1" in 127.0.0.1 | localhost | ::1) return 0 ;; *) return 1 ;; esac; }
tcp_open() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

pg_host="$(url_host "$DATABASE_URL")"; pg_port="$(url_port "$DATABASE_URL" 5432)"
redis_host="$(url_host "$REDIS_URL")"; redis_port="$(url_port "$REDIS_URL" 6379)"
amqp_host="$(url_host "$AMQP_URL")"; amqp_port="$(url_port "$AMQP_URL" 5672)"
nats_host="$(url_host "$NATS_URL")"; nats_port="$(url_port "$NATS_URL" 4222)"

pg_up() { if has pg_isready; then pg_isready -q -h "$pg_host" -p "$pg_port"; else tcp_open "$pg_host" "$pg_port"; fi; }
redis_up() { if has redis-cli; then [ "$(redis-cli -h "$redis_host" -p "$redis_port" ping 2>/dev/null)" = PONG ]; else tcp_open "$redis_host" "$redis_port"; fi; }
amqp_up() { tcp_open "$amqp_host" "$amqp_port"; }
nats_up() { tcp_open "$nats_host" "$nats_port"; }

# The commands that start each local service (the same as on this project's machines), one step
# per line: the message prints them joined with && (and sudo where needed).
start_pg_cmds() { echo "pg_ctlcluster --skip-systemctl-redirect <version> main start"; }
start_redis_cmds() {
  echo "mkdir -p /var/lib/redis /var/log/redis"
  echo "redis-server --daemonize yes --bind 127.0.0.1 -::1 --port $redis_port --save '' --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log"
}
start_amqp_cmds() { echo "rabbitmq-server -detached"; }
# nats-server has no daemon mode: it runs in the background, its log in /var/log.
start_nats_cmds() {
  echo "mkdir -p /var/lib/nats-server"
  echo "(nats-server -a $nats_host -p $nats_port -js -sd /var/lib/nats-server -l /var/log/nats-server.log &)"
}

label() { case "$1" in pg) echo PostgreSQL ;; redis) echo Redis ;; amqp) echo RabbitMQ ;; nats) echo NATS ;; esac; }
pg_cluster_version() { pg_lsclusters -h | head -n 1 | cut -d' ' -f1; }
# A PostgreSQL this script installed is set up like this project's machines: trust on loopback TCP
# (the tests connect as postgres without a password) and the database DATABASE_URL names.
pg_fresh_setup() {
  local version hba db
  version="$(pg_cluster_version)"
  hba="$(pg_conftool -s "$version" main show hba_file)"
  say "PostgreSQL $version was just installed: trust on 127.0.0.1 and ::1 in $hba"
  sed -i -E 's#^(host[[:space:]]+all[[:space:]]+all[[:space:]]+(127\.0\.0\.1/32|::1/128)[[:space:]]+).*#\1trust#' "$hba"
  pg_ctlcluster --skip-systemctl-redirect "$version" main reload
  db="${DATABASE_URL#*://}"; db="${db#*/}"; db="${db%%\?*}"
  if [ -n "$db" ] && [ "$(psql -h "$pg_host" -p "$pg_port" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
    say "creating database $db"
    createdb -h "$pg_host" -p "$pg_port" -U postgres "$db"
  fi
}

# 1. What is missing.
packages=()   # apt packages to install
starts=()     # names of local services to start: pg redis amqp nats
problems=()   # one line each, for the message
cannot=()     # what no command here can fix (a remote service, a wrong CHROMIUM_PATH)
need_pkg() { local p; for p in "${packages[@]:-}"; do [ "$p" = "$1" ] && return 0; done; packages+=("$1"); }

if [ -n "${CHROMIUM_PATH:-}" ]; then
  [ -x "$CHROMIUM_PATH" ] || cannot+=("Chromium: CHROMIUM_PATH=$CHROMIUM_PATH is not an executable (unset it to use Debian's chromium)")
elif ! has chromium; then
  problems+=("Chromium is not installed"); need_pkg chromium
fi
if ! has nginx; then problems+=("nginx is not installed"); need_pkg nginx-light; fi
if ! has wrk; then problems+=("wrk is not installed"); need_pkg wrk; fi
if ! has h2load; then problems+=("h2load is not installed"); need_pkg nghttp2-client; fi
if ! has redis-server || ! has redis-cli; then problems+=("redis-server / redis-cli are not installed"); need_pkg redis-server; fi
if ! has nats-server; then problems+=("nats-server is not installed"); need_pkg nats-server; fi

check_service() { # name host port variable package server-binary
  local name="$1" label host="$2" port="$3" var="$4" pkg="$5" bin="$6"
  label="$(label "$name")"
  if "${name}_up"; then return 0; fi
  if is_local "$host"; then
    problems+=("$label at $host:$port ($var) does not answer")
    has "$bin" || need_pkg "$pkg"
    starts+=("$name")
  else
    cannot+=("$label at $host:$port ($var) does not answer: start it, or point $var at one that runs")
  fi
}
check_service pg "$pg_host" "$pg_port" DATABASE_URL postgresql pg_ctlcluster
check_service redis "$redis_host" "$redis_port" REDIS_URL redis-server redis-server
check_service amqp "$amqp_host" "$amqp_port" AMQP_URL rabbitmq-server rabbitmq-server
check_service nats "$nats_host" "$nats_port" NATS_URL nats-server nats-server

if [ "${#problems[@]}" -eq 0 ] && [ "${#cannot[@]}" -eq 0 ]; then exit 0; fi

# 2. The fix, as one command.
fix=()
if [ "${#packages[@]}" -gt 0 ]; then
  fix+=("apt-get update" "DEBIAN_FRONTEND=noninteractive apt-get install -y ${packages[*]}")
fi
for s in "${starts[@]:-}"; do
  [ -n "$s" ] || continue
  while IFS= read -r line; do fix+=("$line"); done < <("start_${s}_cmds")
done

is_root() { [ "$(id -u)" = 0 ]; }
if [ "${#cannot[@]}" -eq 0 ] && is_root && has apt-get; then
  # 3. Root on Debian: do it.
  installed_pg=0
  for p in "${packages[@]:-}"; do [ "$p" = postgresql ] && installed_pg=1; done
  if [ "${#packages[@]}" -gt 0 ]; then
    say "installing ${packages[*]} from apt"
    for attempt in 1 2 3; do
      if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null; then
        break
      fi
      if [ "$attempt" = 3 ]; then echo "preflight: apt-get install ${packages[*]} failed three times" >&2; exit 1; fi
      say "apt-get failed (attempt $attempt); retrying in $((attempt * 15)) s" >&2
      sleep $((attempt * 15))
    done
  fi
  for s in "${starts[@]:-}"; do
    [ -n "$s" ] || continue
    # Debian's packages may start their service on install: start only what still does not answer.
    if ! "${s}_up"; then
      case "$s" in
        pg)
          say "starting PostgreSQL"
          pg_ctlcluster --skip-systemctl-redirect "$(pg_cluster_version)" main start ;;
        redis)
          say "starting Redis on port $redis_port"
          mkdir -p /var/lib/redis /var/log/redis
          redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$redis_port" --save "" --appendonly no \
            --dir /var/lib/redis --logfile /var/log/redis/ci.log ;;
        amqp)
          say "starting RabbitMQ"
          rabbitmq-server -detached ;;
        nats)
          say "starting NATS (JetStream) on port $nats_port"
          mkdir -p /var/lib/nats-server
          nats-server -a "$nats_host" -p "$nats_port" -js -sd /var/lib/nats-server -l /var/log/nats-server.log </dev/null >/dev/null 2>&1 &
          ;;
      esac
    fi
    for _ in $(seq 1 "$wait_s"); do "${s}_up" && break; sleep 1; done
    if ! "${s}_up"; then echo "preflight: $(label "$s") was started but does not answer after ${wait_s} s" >&2; exit 1; fi
  done
  if [ "$installed_pg" = 1 ]; then pg_fresh_setup; fi
  # A package that installed but put nothing where the tests look (e.g. no /usr/bin/chromium).
  if { [ -z "${CHROMIUM_PATH:-}" ] && ! has chromium; } || ! has nginx || ! has wrk || ! has h2load || ! has redis-server || ! has redis-cli || ! has nats-server; then
    echo "preflight: installed ${packages[*]}, but Chromium, nginx, wrk, h2load, redis-server or nats-server is still missing" >&2
    exit 1
  fi
  exit 0
fi

# 4. Anywhere else: say what is missing and what to run, change nothing.
{
  echo "npm test cannot run yet on this machine:"
  for p in "${problems[@]:-}" "${cannot[@]:-}"; do [ -n "$p" ] && echo "  - $p"; done
  if [ "${#cannot[@]}" -eq 0 ] && has apt-get; then
    # Not root: the one command is this script under sudo (sudo drops the environment, so the
    # variables that point elsewhere are kept explicitly).
    keep=""
    for v in DATABASE_URL REDIS_URL AMQP_URL NATS_URL CHROMIUM_PATH; do [ -n "${!v+x}" ] && [ -n "$(printenv "$v" || true)" ] && keep+="${keep:+,}$v"; done
    echo "Run this, then npm test again:"
    echo "  sudo ${keep:+--preserve-env=$keep }bash scripts/preflight.sh"
    joined=""
    for c in "${fix[@]}"; do joined+="${joined:+ && }$c"; done
    echo "(as root on Debian it runs: $joined)"
  elif [ "${#packages[@]}" -gt 0 ] || [ "${#starts[@]}" -gt 0 ]; then
    echo "Install ${packages[*]:-nothing more} (Debian's package names) and start the services above, then npm test again."
  fi
} >&2
exit 1
