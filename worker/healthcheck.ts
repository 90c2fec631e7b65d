/**
 * The image's HEALTHCHECK (Dockerfile): asks the process the container runs whether it is ready.
 * deploy/docker-entrypoint.sh execs that process, so it is PID 1, or PID 1's child under an init
 * (`docker run --init`, compose's `init: true`); its command line says which it is:
 *
 * - the decision server: GET /readyz on DECISION_PORT (ready once it holds a policy and its store
 *   answers: docs/decision-api.md);
 * - the control plane: GET /login on 127.0.0.1:PORT. Next.js renames its process (`next-server
 *   (v…)`, which rewrites /proc/<pid>/cmdline), so `-p` and `-H` cannot be read back: in a container,
 *   give the port as PORT and keep the default address (the image, compose and deploy/ do);
 * - anything else (the worker, a one-shot `sluice` command) serves no HTTP: healthy while it runs,
 *   since its exit ends the container.
 *
 * Exits 0 when healthy, 1 when not, with one line saying why (`docker inspect` shows it).
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { currentEnv } from "../lib/env";

/** The title Next.js gives the control plane's process once its server starts. */
const NEXT_SERVER_TITLE = "next-server";

/** Where a health probe is sent: the URL, or null for a process without an HTTP endpoint. */
export function probeUrl(cmdline: readonly string[], settings: { decisionPort: number; decisionHost: string; controlPlanePort: number }): string | null {
  const script = cmdline.findIndex((arg) => arg.endsWith(".js"));
  const name = script < 0 ? "" : path.basename(cmdline[script]!);
  if (name === "decision-server.js") return `http://${local(settings.decisionHost)}:${settings.decisionPort}/readyz`;
  // The launcher still starting, or Next's server once it has renamed the process.
  if (name === "control-plane.js" || cmdline[0]?.startsWith(NEXT_SERVER_TITLE)) return `http://127.0.0.1:${settings.controlPlanePort}/login`;
  return null;
}

/** The first process of `commandLines` (PID 1, then its descendants) that has a probe, and its URL. */
export function containerProbeUrl(commandLines: readonly (readonly string[])[], settings: Parameters<typeof probeUrl>[1]): string | null {
  for (const cmdline of commandLines) {
    const url = probeUrl(cmdline, settings);
    if (url !== null) return url;
  }
  return null;
}

/** The command lines of PID 1 and its descendants, breadth first (a few dozen at most: a supervisor's decision processes). */
function containerCommandLines(): string[][] {
  const lines: string[][] = [];
  const pids = [1];
  for (let i = 0; i < pids.length && i < 64; i++) {
    const pid = pids[i]!;
    try {
      lines.push(readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean));
      pids.push(...readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number));
    } catch {
      // gone meanwhile
    }
  }
  return lines;
}

/** The address to ask a server that listens on `host`: loopback when it listens on every interface. */
function local(host: string): string {
  if (host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}

async function main(): Promise<number> {
  const commandLines = containerCommandLines();
  const url = containerProbeUrl(commandLines, { decisionPort: currentEnv("DECISION_PORT"), decisionHost: currentEnv("DECISION_HOST"), controlPlanePort: currentEnv("PORT") });
  if (url === null) {
    console.log(`no HTTP endpoint to ask (${commandLines.map((c) => c.join(" ")).join("; ")}): healthy while it runs`);
    return 0;
  }
  const response = await fetch(url, { signal: AbortSignal.timeout(2_500), redirect: "manual" });
  console.log(`${url}: ${response.status}`);
  return response.status === 200 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.log(`unhealthy: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    },
  );
}
