/**
 * `npm run start`: the control plane in production. `npm run build` writes Next.js's standalone
 * server (.next/standalone/server.js: the app with only the files and packages it uses, nothing to
 * compile at start); this process runs it, listening on `-p`/`--port` (default: PORT, 3000) and
 * `-H`/`--hostname` (default 0.0.0.0), the flags `next start` takes. On SIGTERM Next's own handler
 * stops accepting, finishes the requests in flight and exits.
 *
 * Why not `node .next/standalone/server.js` itself: it takes its address from HOSTNAME, which
 * container runtimes set to the container's name, so it would listen on the container's address
 * only and the image's health check on 127.0.0.1 would never reach it (Next's own Dockerfile
 * example sets HOSTNAME=0.0.0.0 for that reason). Here the address is a flag with a default.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { z } from "zod";
import { currentEnv, exportEnv } from "../lib/env";
import { createLogger, errorMessage } from "../lib/log";

export interface ControlPlaneAddress {
  port: number;
  hostname: string;
}

const portFlag = z.coerce.number().int().min(1).max(65535);

/** The address from `next start`'s flags, else PORT and every interface; a bad flag throws naming it. */
export function controlPlaneAddress(args: readonly string[]): ControlPlaneAddress {
  const { values } = parseArgs({
    args: [...args],
    options: { port: { type: "string", short: "p" }, hostname: { type: "string", short: "H" } },
    strict: true,
    allowPositionals: false,
  });
  let port = currentEnv("PORT");
  if (values.port !== undefined) {
    const parsed = portFlag.safeParse(values.port);
    if (!parsed.success) throw new Error(`--port: expected a port from 1 to 65535, got ${JSON.stringify(values.port)}`);
    port = parsed.data;
  }
  const hostname = values.hostname ?? "0.0.0.0";
  if (hostname.trim() === "") throw new Error("--hostname: expected an address or a host name, got an empty one");
  return { port, hostname };
}

/** The package's root: the nearest folder upwards with a package.json (this file runs from worker/ under tsx, from dist/server compiled). */
export function packageRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

async function main(): Promise<void> {
  const address = controlPlaneAddress(process.argv.slice(2));
  const standalone = path.join(packageRoot(import.meta.dirname), ".next", "standalone");
  const server = path.join(standalone, "server.js");
  if (!existsSync(server)) throw new Error(`${server} is missing: run \`npm run build\` first`);
  // `next build` alone (the demo, the browser tests) writes the server but not its static files,
  // which scripts/build.ts copies in: without them every page would come without styles or scripts.
  if (!existsSync(path.join(standalone, ".next", "static"))) throw new Error(`${standalone} has no .next/static (built by \`next build\` alone?): run \`npm run build\``);
  exportEnv({ PORT: String(address.port), HOSTNAME: address.hostname });
  await import(pathToFileURL(server).href);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    createLogger("control-plane").fatal(`control plane failed to start: ${errorMessage(error)}`);
    process.exit(1);
  });
}
