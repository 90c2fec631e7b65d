#!/bin/sh
# The image's entrypoint (Dockerfile). The first argument picks the process, by its name in
# package.json; the rest is passed on:
#
#   start            the control plane (the default)      start:decision   the decision server
#   start:worker     the worker                           sluice ARGS...   the CLI: `sluice migrate`, …
#
# What runs is the script's own command line from package.json (for `sluice`, node and the bin), so
# the image runs exactly what `npm run` runs outside it. It replaces this shell (exec) instead of
# going through `npm run`: the process is then PID 1 and gets the runtime's SIGTERM itself, to drain.
set -eu
process="${1:-start}"
[ "$#" -eq 0 ] || shift
case "$process" in
  start | start:decision | start:worker)
    command=$(node -p 'require("./package.json").scripts[process.argv[1]]' "$process") ;;
  sluice)
    command="node $(node -p 'require("./package.json").bin.sluice')" ;;
  *)
    echo "unknown process \"$process\": start, start:decision, start:worker, or sluice followed by a command" >&2
    exit 64 ;;
esac
exec sh -c "exec $command \"\$@\"" "$process" "$@"
