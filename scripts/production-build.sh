#!/usr/bin/env bash
# The production build, the same everywhere: the image's build stage runs it (Dockerfile), and so
# does scripts/production-smoke.sh outside a container. Install everything, build everything
# (npm run build: scripts/build.ts), then drop the development dependencies: what is left runs on
# plain node (docs/production.md "The build").
set -euo pipefail
cd "$(dirname "$0")/.."
npm ci --no-audit --no-fund
npm run build
npm prune --omit=dev --no-audit --no-fund
