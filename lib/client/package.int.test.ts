/**
 * `sluice/client` as its consumers get it: built (`npm run build:client` → dist/client), resolved
 * through package.json `exports`, imported by plain `node` (no tsx), compiled by a TypeScript
 * consumer using `await using`, and loaded into Chromium as ES modules — each against a real
 * decision server.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, symlink, writeFile, mkdir } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { chromium } from "@playwright/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "../..");
let sluice: ClientTestServer;
let consumer: string;

beforeAll(async () => {
  const [server] = await Promise.all([startDecisionServer(["pkg"]), run("npm", ["run", "--silent", "build:client"], { cwd: ROOT })]);
  sluice = server;
  // A project that depends on sluice, as `npm install <path>` or `npm link` would lay it out.
  consumer = await mkdtemp(path.join(tmpdir(), "sluice-consumer-"));
  await mkdir(path.join(consumer, "node_modules"));
  await symlink(ROOT, path.join(consumer, "node_modules", "sluice"), "dir");
  await writeFile(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
}, 180_000);

afterAll(async () => {
  await sluice?.stop();
  if (consumer) await rm(consumer, { recursive: true, force: true });
});

function node(file: string) {
  return run(process.execPath, [file], { cwd: consumer, env: { ...process.env, SLUICE_URL: sluice.url, SLUICE_TOKEN: sluice.token, KEYS: JSON.stringify(sluice.keys("pkg")) } });
}

describe("the sluice/client package", () => {
  it("exports only built files, each with its types", async () => {
    const pkg = JSON.parse(await readFile(path.join(ROOT, "package.json"), "utf8")) as { exports: Record<string, { types: string; default: string }> };
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      expect(subpath).toMatch(/^\.\/client(\/[a-z]+)?$/);
      await expect(readFile(path.join(ROOT, target.default), "utf8"), target.default).resolves.toContain("export");
      await expect(readFile(path.join(ROOT, target.types), "utf8"), target.types).resolves.toContain("export");
    }
  });

  it("is importable by plain node as ESM, and decides against a real decision server", async () => {
    await writeFile(
      path.join(consumer, "plain.mjs"),
      `import { SluiceClient, fetchWithRetry } from "sluice/client";
import { sluiceExpress } from "sluice/client/express";
const keys = JSON.parse(process.env.KEYS);
const client = new SluiceClient({ url: process.env.SLUICE_URL, token: process.env.SLUICE_TOKEN, timeoutMs: 2000 });
const answers = [];
for (let i = 0; i < 6; i++) answers.push(await client.check({ key: keys.free, operation: "GET /v1/orders" }));
console.log(JSON.stringify({
  statuses: answers.map((a) => a.status),
  retryAfter: answers[5].retryAfterSeconds,
  fetchWithRetry: typeof fetchWithRetry,
  express: typeof sluiceExpress({ client }),
}));
`,
    );
    const { stdout } = await node("plain.mjs");
    const out = JSON.parse(stdout) as { statuses: number[]; retryAfter: number; fetchWithRetry: string; express: string };
    expect(out.statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(out.retryAfter).toBeGreaterThan(0);
    expect(out).toMatchObject({ fetchWithRetry: "function", express: "function" });
  });

  it("types a TypeScript 5.9 consumer, whose `await using` lease (compiled for Node 20) is released at the block's end", async () => {
    await writeFile(
      path.join(consumer, "tsconfig.json"),
      JSON.stringify({
        // What `await using` needs: the disposable lib for the types, and a target below ESNext so
        // tsc lowers it (Node 20's V8 has Symbol.asyncDispose but not the syntax).
        compilerOptions: { target: "ES2022", lib: ["ES2022", "DOM", "esnext.disposable"], module: "NodeNext", moduleResolution: "NodeNext", strict: true, types: [], skipLibCheck: true, outDir: "out" },
        include: ["typed.ts"],
      }),
    );
    await writeFile(
      path.join(consumer, "typed.ts"),
      `import { SluiceClient, type DecisionAnswer } from "sluice/client";
declare const process: { env: Record<string, string | undefined> };
const keys = JSON.parse(process.env.KEYS ?? "{}") as { conc: string };
const client = new SluiceClient({ url: process.env.SLUICE_URL!, token: process.env.SLUICE_TOKEN!, timeoutMs: 2000 });
const request = { key: keys.conc, operation: "GET /v1/hold" };
const seen: string[] = [];
{
  await using lease = await client.acquire(request);
  const answer: DecisionAnswer = lease.answer;
  seen.push(answer.allowed ? "held" : "denied");
  seen.push((await client.check(request)).reason);
}
seen.push((await client.withLease(request, () => "again")).allowed ? "released" : "still held");
console.log(JSON.stringify(seen));
`,
    );
    const tsc = path.join(ROOT, "node_modules", ".bin", "tsc");
    await run(tsc, ["-p", "tsconfig.json"], { cwd: consumer }).catch((e: { stdout?: string }) => {
      throw new Error(`tsc failed:\n${e.stdout ?? String(e)}`);
    });
    const { stdout } = await node("out/typed.js");
    expect(JSON.parse(stdout)).toEqual(["held", "concurrency_limited", "released"]);
  });

  it("runs in a browser: fetchWithRetry honours Retry-After, SluiceClient decides", async () => {
    // One origin serves the page, the built modules, a scripted API, and the decision API (proxied),
    // as a browser app would reach them; no Node global exists in the page.
    let apiCalls = 0;
    const site = http.createServer((req, res) => {
      const url = req.url ?? "/";
      if (url.startsWith("/?")) {
        // The page does the work in a module script, with the token and key from its query.
        res.writeHead(200, { "content-type": "text/html" });
        res.end(`<!doctype html><title>sdk</title><script type="module">
import { SluiceClient, fetchWithRetry } from "/sdk/index.js";
const q = new URLSearchParams(location.search);
const started = performance.now();
const res = await fetchWithRetry("/api");
const waitedMs = performance.now() - started;
const client = new SluiceClient({ url: location.origin, token: q.get("token"), timeoutMs: 2000 });
const answer = await client.check({ key: q.get("key"), operation: "GET /v1/orders" });
window.sdkResult = { status: res.status, body: await res.text(), waitedMs, allowed: answer.allowed, tenant: answer.tenant, hasProcess: "process" in globalThis };
</script>`);
      } else if (url.startsWith("/sdk/")) {
        readFile(path.join(ROOT, "dist/client", path.basename(url))).then(
          (body) => {
            res.writeHead(200, { "content-type": "text/javascript" });
            res.end(body);
          },
          () => {
            res.writeHead(404);
            res.end();
          },
        );
      } else if (url === "/api") {
        apiCalls++;
        res.writeHead(apiCalls === 1 ? 429 : 200, apiCalls === 1 ? { "retry-after": "1" } : {});
        res.end(apiCalls === 1 ? "" : "ok");
      } else {
        const upstream = http.request(`${sluice.url}${url}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        req.pipe(upstream);
      }
    });
    await new Promise<void>((r) => site.listen(0, "127.0.0.1", r));
    const origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(`${origin}/?${new URLSearchParams({ token: sluice.token, key: sluice.keys("pkg").free2 })}`);
      const handle = await page.waitForFunction(() => (window as unknown as { sdkResult?: unknown }).sdkResult, null, { timeout: 20_000 }).catch((e: unknown) => {
        throw new Error(`the page did not finish: ${errors.join("; ") || String(e)}`);
      });
      const result = (await handle.jsonValue()) as { status: number; waitedMs: number };
      expect(result).toMatchObject({ status: 200, body: "ok", allowed: true, tenant: "pkg-free", hasProcess: false });
      expect(result.waitedMs).toBeGreaterThanOrEqual(1000);
      expect(apiCalls).toBe(2);
    } finally {
      await browser.close();
      site.closeAllConnections();
      site.close();
    }
  });
});
