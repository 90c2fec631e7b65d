import net, { type AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { denyShareThreshold } from "../../jobs/alerts";
import { assertDeliverable, deliverWebhook, refusedAddressReason, type Resolver } from "./alert-webhook";

/** A TCP listener on 127.0.0.1 that counts connections: whatever reaches it was not refused. */
async function countingListener(): Promise<{ port: number; connections: () => number; close: () => void }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { port: (server.address() as AddressInfo).port, connections: () => connections, close: () => server.close() };
}

const noDns: Resolver = async (host) => {
  throw new Error(`unexpected DNS lookup of ${host}`);
};

describe("webhook destinations", () => {
  // Every spelling of a loopback, link-local or private host a URL can carry, IPv4 embeddings in
  // IPv6 included (issue #17: the first five passed the old text-prefix check).
  const refusedUrls = [
    "https://[::ffff:127.0.0.1]/",
    "https://[::ffff:169.254.169.254]/latest/meta-data",
    "https://[0:0:0:0:0:ffff:a9fe:a9fe]/",
    "https://[::127.0.0.1]/",
    "https://[64:ff9b::a9fe:a9fe]/",
    "https://[64:ff9b::7f00:1]/",
    "https://[64:ff9b:1::a9fe:a9fe]/",
    "https://[2002:7f00:1::]/",
    "https://[2002:a9fe:a9fe::1]/",
    "https://[2001:0:808:808::80ff:fffe]/",
    "https://[::ffff:0:7f00:1]/",
    "https://[::FFFF:7F00:1]/",
    "https://[::1]/",
    "https://[::]/",
    "https://[fe80::1]/",
    "https://[fd00::1]/",
    "https://[ff02::1]/",
    "https://127.0.0.1/",
    "https://127.1/",
    "https://0x7f.1/",
    "https://0x7f000001/",
    "https://2130706433/",
    "https://0177.0.0.1/",
    "https://127.0.0.1./",
    "https://169.254.169.254/",
    "https://0.0.0.0/",
    "https://10.0.0.1/",
    "https://100.64.0.1/",
    "https://172.16.0.1/",
    "https://192.168.0.1/",
    "https://224.0.0.1/",
  ];
  for (const url of refusedUrls) {
    it(`refuses ${url}`, async () => {
      await expect(assertDeliverable(url, false, noDns)).rejects.toThrow("not globally reachable");
    });
  }

  it("accepts global addresses and names that resolve only to global addresses", async () => {
    for (const url of ["https://8.8.8.8/", "https://[2606:4700:4700::1111]/", "https://[::ffff:8.8.8.8]/", "https://[64:ff9b::808:808]/"]) {
      await expect(assertDeliverable(url, false, noDns), url).resolves.toBeInstanceOf(URL);
    }
    await expect(assertDeliverable("https://hooks.example/x", false, async () => ["8.8.8.8", "2001:4860:4860::8888"])).resolves.toBeInstanceOf(URL);
  });

  it("refuses a name when any address it resolves to is not global", async () => {
    await expect(assertDeliverable("https://mixed.example/", false, async () => ["8.8.8.8", "::ffff:127.0.0.1"])).rejects.toThrow("loopback via IPv4-mapped");
    await expect(assertDeliverable("https://empty.example/", false, async () => [])).rejects.toThrow("no address");
  });

  it("refuses plain http, credentials and private hosts unless explicitly allowed", async () => {
    await expect(assertDeliverable("http://example.com/x", false)).rejects.toThrow("https");
    await expect(assertDeliverable("https://u:p@example.com/x", false)).rejects.toThrow("credentials");
    await expect(assertDeliverable("https://169.254.169.254/latest", false)).rejects.toThrow("link-local");
    await expect(assertDeliverable("http://127.0.0.1:9/x", true)).resolves.toBeInstanceOf(URL);
  });

  it("never connects to a name that resolves to 127.0.0.1 (the system resolver's localhost)", async () => {
    const listener = await countingListener();
    try {
      const result = await deliverWebhook(`https://localhost:${listener.port}/hook`, { a: 1 }, { allowPrivate: false, baseDelayMs: 1 });
      expect(result).toMatchObject({ ok: false, attempts: 0 });
      expect(result.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1), which is not globally reachable \(loopback/);
      const injected = await deliverWebhook(`https://hooks.example:${listener.port}/hook`, {}, { allowPrivate: false, resolve: async () => ["127.0.0.1"] });
      expect(injected.error).toContain("loopback");
      expect(listener.connections()).toBe(0);
    } finally {
      listener.close();
    }
  });

  it("resolves once and connects to the address it checked, so a rebinding answer is never used (DNS rebinding)", async () => {
    const listener = await countingListener();
    let lookups = 0;
    // First answer global, every later one loopback: a second lookup at connect time would reach the listener.
    const rebinding: Resolver = async () => (lookups++ === 0 ? ["192.88.100.1"] : ["127.0.0.1"]);
    try {
      const result = await deliverWebhook(`https://rebind.example:${listener.port}/hook`, {}, { allowPrivate: false, attempts: 2, baseDelayMs: 1, timeoutMs: 300, resolve: rebinding });
      expect(result.ok).toBe(false);
      expect(result.attempts).toBe(2);
      expect(lookups).toBe(1);
      expect(listener.connections()).toBe(0);
    } finally {
      listener.close();
    }
  });

  it("judges a connected peer's address like a resolved one", () => {
    expect(refusedAddressReason("::ffff:127.0.0.1")).toMatch(/loopback/);
    expect(refusedAddressReason("8.8.8.8")).toBeNull();
    expect(refusedAddressReason("")).toBe("not an IP address");
  });
});

describe("429-share alert threshold", () => {
  it("is at least 5 %, twice the baseline, and 10 points above it", () => {
    expect(denyShareThreshold(0)).toBe(0.1);
    expect(denyShareThreshold(0.3)).toBe(0.6);
    expect(denyShareThreshold(0.05)).toBeCloseTo(0.15);
  });
});
