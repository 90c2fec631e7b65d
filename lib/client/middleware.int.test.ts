/**
 * The express, fastify and Hono middleware, each in a real server of its framework, against a real
 * decision server: the same contract (testing/middleware-contract.ts) for all three.
 */
import type { AddressInfo } from "node:net";
import http from "node:http";
import { serve } from "@hono/node-server";
import express from "express";
import Fastify from "fastify";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, it } from "vitest";
import { freePort } from "../net/ports";
import { SluiceClient } from "./client";
import { sluiceExpress } from "./express";
import { sluiceFastify } from "./fastify";
import { sluiceHono } from "./hono";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";
import { expectMiddlewareContract, testCost } from "./testing/middleware-contract";

let sluice: ClientTestServer;
let deadUrl: string;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  sluice = await startDecisionServer(["express", "fastify", "hono"]);
  deadUrl = `http://127.0.0.1:${await freePort()}`;
});

afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
  await sluice?.stop();
});

/** The two clients every app gets: the live decision server, and a dead one with onError closed. */
function clients() {
  // A generous budget for the contract on a busy machine (a first decision past 2 s under CI's int
  // stage failed open and answered without RateLimit headers); the failure path is the dead URL.
  return [
    new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 8_000 }),
    new SluiceClient({ url: deadUrl, token: sluice.token, timeoutMs: 50, onError: "closed" }),
  ] as const;
}

const skip = (path: string) => path === "/healthz";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

describe("express", () => {
  it("answers 429/401/403/503 with the decision's headers, sets RateLimit on allowed responses, releases leases at the end", async () => {
    let handled = 0;
    const urls = await Promise.all(
      clients().map(async (client) => {
        const app = express();
        app.use(sluiceExpress({ client, skip: (req) => skip(req.url), cost: (req) => testCost(req.headers["x-test-cost"] as string | undefined) }));
        app.get("/healthz", (_req, res) => void res.send("ok"));
        app.get("/v1/orders/:id", (req, res) => {
          handled++;
          res.json({ id: req.params.id });
        });
        app.get("/v1/hold", async (req, res) => {
          handled++;
          await sleep(Number(req.query.ms ?? 0));
          res.json({ held: true });
        });
        const server = http.createServer(app);
        closers.push(() => new Promise((r) => server.close(r)));
        return listen(server);
      }),
    );
    await expectMiddlewareContract({ url: urls[0], closedUrl: urls[1], handled: () => handled }, sluice.keys("express"));
  });
});

describe("fastify", () => {
  it("answers 429/401/403/503 with the decision's headers, sets RateLimit on allowed responses, releases leases at the end", async () => {
    let handled = 0;
    const urls = await Promise.all(
      clients().map(async (client) => {
        const app = Fastify();
        await app.register(sluiceFastify({ client, skip: (req) => skip(req.url), cost: (req) => testCost(req.headers["x-test-cost"] as string | undefined) }));
        app.get("/healthz", async () => "ok");
        app.get<{ Params: { id: string } }>("/v1/orders/:id", async (req) => {
          handled++;
          return { id: req.params.id };
        });
        app.get<{ Querystring: { ms?: string } }>("/v1/hold", async (req) => {
          handled++;
          await sleep(Number(req.query.ms ?? 0));
          return { held: true };
        });
        closers.push(() => app.close());
        return app.listen({ port: 0, host: "127.0.0.1" });
      }),
    );
    await expectMiddlewareContract({ url: urls[0], closedUrl: urls[1], handled: () => handled }, sluice.keys("fastify"));
  });
});

describe("Hono (on @hono/node-server)", () => {
  it("answers 429/401/403/503 with the decision's headers, sets RateLimit on allowed responses, releases leases at the end", async () => {
    let handled = 0;
    const urls = await Promise.all(
      clients().map(async (client) => {
        const app = new Hono();
        app.use(sluiceHono({ client, skip: (c) => skip(c.req.path), cost: (c) => testCost(c.req.header("x-test-cost")) }));
        app.get("/healthz", (c) => c.text("ok"));
        app.get("/v1/orders/:id", (c) => {
          handled++;
          return c.json({ id: c.req.param("id") });
        });
        app.get("/v1/hold", async (c) => {
          handled++;
          await sleep(Number(c.req.query("ms") ?? 0));
          return c.json({ held: true });
        });
        const port = await freePort();
        const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" });
        closers.push(() => new Promise((r) => server.close(r)));
        return `http://127.0.0.1:${port}`;
      }),
    );
    await expectMiddlewareContract({ url: urls[0], closedUrl: urls[1], handled: () => handled }, sluice.keys("hono"));
  });
});
