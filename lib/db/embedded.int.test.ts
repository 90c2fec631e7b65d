import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from "./embedded";
import { migrate } from "./migrate";

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function count(url: string, sql: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(sql);
    return Number(rows[0]?.n);
  } finally {
    await client.end();
  }
}

function occupyPort(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port: 0, host: "127.0.0.1" }, () => {
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address ? address.port : 0 });
    });
  });
}

describe("startEmbeddedPostgres", () => {
  it("initialises a cluster once, keeps its data across restarts, and moves off a taken port", async () => {
    const root = await mkdtemp(path.join(tmpdir(), "sluice-embedded-"));
    // As root the server runs as the `postgres` user, which must be able to reach the data directory.
    await chmod(root, 0o755);
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const dataDir = path.join(root, "pg");
    const taken = await occupyPort();
    cleanups.push(() => new Promise((resolve) => taken.server.close(resolve)));

    let first: EmbeddedPostgresHandle | undefined = await startEmbeddedPostgres({ dataDir, port: taken.port });
    cleanups.push(() => first?.stop() ?? Promise.resolve());
    expect(first.port).not.toBe(taken.port);
    expect(new URL(first.url).pathname).toBe("/sluice");
    expect((await migrate(first.url)).applied.length).toBeGreaterThan(0);
    await count(first.url, `INSERT INTO "Tier" ("id", "name") VALUES ('t1', 'free') RETURNING 1 AS n`);

    // While it runs, a second start on the same data directory reuses the server instead of failing.
    const again = await startEmbeddedPostgres({ dataDir });
    expect(again.port).toBe(first.port);
    await again.stop(); // not ours to stop: the first server keeps running
    expect(await count(first.url, `SELECT count(*) AS n FROM "Tier"`)).toBe(1);

    await first.stop();
    first = undefined;

    const second = await startEmbeddedPostgres({ dataDir });
    cleanups.push(() => second.stop());
    expect(await count(second.url, `SELECT count(*) AS n FROM "Tier"`)).toBe(1);
    expect((await migrate(second.url)).applied).toEqual([]);
    await second.stop();
  });
});
