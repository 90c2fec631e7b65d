# syntax=docker/dockerfile:1
# Sluice's one image: the control plane, the decision server, the worker and the `sluice` CLI; its
# command picks the process (deploy/docker-entrypoint.sh): start (the default), start:decision,
# start:worker, or sluice followed by a command (`sluice migrate`). docs/production.md "The image".
#
# This repository's CI does not build it (no container engine runs there). deploy/deploy.test.ts
# checks this file against the package and the code, and scripts/production-smoke.sh runs the
# build stage's script outside a container and starts every process from its output.

# Build: install everything, build everything, drop the development dependencies.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY . .
RUN bash scripts/production-build.sh

# Run: node, the pruned dependencies and the build's output, as the image's unprivileged `node` user (uid 1000).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Next.js may write its cache beside its standalone server.
COPY --from=build --chown=node:node /app/.next/standalone ./.next/standalone
COPY --from=build /app/prisma/migrations ./prisma/migrations
COPY --from=build /app/deploy/docker-entrypoint.sh ./deploy/docker-entrypoint.sh
USER node
# PORT (the control plane), DECISION_PORT (the decision API), SLUICE_GRPC_PORT (Envoy's rate limit service).
EXPOSE 3000 8787 8081
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "dist/server/healthcheck.js"]
ENTRYPOINT ["sh", "deploy/docker-entrypoint.sh"]
CMD ["start"]
