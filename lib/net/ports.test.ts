import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, portIsFree } from "./ports";

let held: Server | null = null;
afterEach(async () => {
  await new Promise<void>((resolve) => (held ? held.close(() => resolve()) : resolve()));
  held = null;
});

async function hold(port: number): Promise<void> {
  held = createServer();
  await new Promise<void>((resolve) => held!.listen(port, "127.0.0.1", resolve));
}

describe("ports", () => {
  it("a port someone listens on is not free, and freePort avoids it even when preferred", async () => {
    const port = await freePort();
    expect(await portIsFree(port)).toBe(true);
    await hold(port);
    expect(await portIsFree(port)).toBe(false);
    const other = await freePort(port);
    expect(other).not.toBe(port);
    expect(await portIsFree(other)).toBe(true);
  });

  it("gives the preferred port when it is free", async () => {
    const port = await freePort();
    expect(await freePort(port)).toBe(port);
  });
});
