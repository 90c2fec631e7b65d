/**
 * The Next.js adapters in a real Next.js 16 app (`next build` + `next start`) against a real
 * decision server: `withSluice` on route handlers (testing/next-app/app/v1/**) and `sluiceProxy`
 * in its proxy.ts (testing/next-app/app/proxied/**). The app is copied to a temporary project that
 * depends on `sluice` as a consumer would (node_modules/sluice → this repository, built), so
 * `sluice/client/next` resolves through package.json `exports` to dist/client.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../net/ports";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";
import { expectMiddlewareContract } from "./testing/middleware-contract";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
let sluice: ClientTestServer;
let project: string;
const servers: ChildProcess[] = [];
let liveUrl: string;
let closedUrl: string;

async function nextStart(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const child = spawn(path.join(project, "node_modules/.bin/next"), ["start", "-p", String(port), "-H", "127.0.0.1"], {
    cwd: project,
    env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  servers.push(child);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`next start exited: ${output}`);
    const up = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return url;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`next start did not come up: ${output}`);
}

beforeAll(async () => {
  const build = (async () => {
    await run("npm", ["run", "--silent", "build:client"], { cwd: ROOT });
    project = await mkdtemp(path.join(tmpdir(), "sluice-next-"));
    await cp(path.join(import.meta.dirname, "testing/next-app"), project, { recursive: true });
    await mkdir(path.join(project, "node_modules"));
    for (const entry of await readdir(path.join(ROOT, "node_modules"))) {
      await symlink(path.join(ROOT, "node_modules", entry), path.join(project, "node_modules", entry));
    }
    await symlink(ROOT, path.join(project, "node_modules", "sluice"), "dir");
    await writeFile(path.join(project, "package.json"), JSON.stringify({ name: "next-consumer", private: true, type: "module" }));
    await writeFile(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "ES2022", lib: ["dom", "ES2023", "esnext.disposable"], module: "esnext", moduleResolution: "bundler", strict: true, noEmit: true, skipLibCheck: true, isolatedModules: true, jsx: "react-jsx", esModuleInterop: true, plugins: [{ name: "next" }] },
        include: ["**/*.ts"],
        exclude: ["node_modules"],
      }),
    );
    // The project and this repository (its node_modules and dist) live in different trees; the
    // types are checked by the repository's own tsc, not again here.
    await writeFile(path.join(project, "next.config.mjs"), 'export default { turbopack: { root: "/" }, outputFileTracingRoot: "/", typescript: { ignoreBuildErrors: true } };\n');
    await run(path.join(project, "node_modules/.bin/next"), ["build"], { cwd: project, env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" }, maxBuffer: 16 * 1024 * 1024 });
  })();
  const [server] = await Promise.all([startDecisionServer(["next", "proxy"]), build]);
  sluice = server;
  const env = { SLUICE_TOKEN: sluice.token };
  [liveUrl, closedUrl] = await Promise.all([
    nextStart({ ...env, SLUICE_URL: sluice.url }),
    nextStart({ ...env, SLUICE_URL: `http://127.0.0.1:${await freePort()}`, SLUICE_ON_ERROR: "closed", SLUICE_TIMEOUT_MS: "50" }),
  ]);
}, 600_000);

afterAll(async () => {
  for (const child of servers) child.kill("SIGTERM");
  await sluice?.stop();
  if (project) await rm(project, { recursive: true, force: true });
});

const handled = async () => ((await (await fetch(`${liveUrl}/count`)).json()) as { handled: number }).handled;

describe("Next.js", () => {
  it("withSluice (route handlers): 429/401/403/503 with the decision's headers, RateLimit on allowed responses, leases held until a streamed body ends", async () => {
    await expectMiddlewareContract({ url: liveUrl, closedUrl, handled }, sluice.keys("next"));
  });

  it("sluiceProxy (proxy.ts): the same answers before any route runs, RateLimit headers on allowed responses", async () => {
    await expectMiddlewareContract({ url: `${liveUrl}/proxied`, closedUrl: `${closedUrl}/proxied`, handled, leases: false }, sluice.keys("proxy"));
  });

  it("sluiceProxy releases a lease at once: a proxy never sees the response end", async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`${liveUrl}/proxied/v1/orders/1`, { headers: { "x-api-key": sluice.keys("proxy").conc } })).status);
    expect(statuses).toEqual([200, 200, 200]);
  });
});
