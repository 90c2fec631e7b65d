import { describe, expect, it } from "vitest";
import { sameOrigin } from "./admin-auth";
import { readBodyText, readJsonBody } from "./body";
import { errorResponse } from "./errors";
import { ServiceError } from "../errors";

describe("sameOrigin", () => {
  const post = (headers: Record<string, string>) => new Request("http://sluice.local/api/v1/policy/publish", { method: "POST", headers });

  it("accepts a same-host Origin and refuses another host or none", () => {
    expect(sameOrigin(post({ host: "sluice.local", origin: "http://sluice.local" }))).toBe(true);
    expect(sameOrigin(post({ host: "sluice.local", origin: "https://evil.example" }))).toBe(false);
    expect(sameOrigin(post({ host: "sluice.local" }))).toBe(false);
    expect(sameOrigin(post({ host: "sluice.local", origin: "null" }))).toBe(false);
  });

  it("does not constrain GET", () => {
    expect(sameOrigin(new Request("http://sluice.local/x", { headers: { origin: "https://evil.example" } }))).toBe(true);
  });
});

describe("request bodies", () => {
  it("refuses a streamed body over the cap with 413, without reading it all", async () => {
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new Uint8Array(64 * 1024));
        if (pulled > 1000) controller.close();
      },
    });
    const request = new Request("http://x/", { method: "POST", body: stream, duplex: "half" } as RequestInit);
    const error = await readBodyText(request, 1024 * 1024).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect((error as ServiceError).status).toBe(413);
    expect(pulled).toBeLessThan(40);
  });

  it("answers 400 for malformed JSON and an empty object for an empty body", async () => {
    const bad = await readJsonBody(new Request("http://x/", { method: "POST", body: "{oops" })).catch((e: unknown) => e);
    expect((bad as ServiceError).status).toBe(400);
    expect(await readJsonBody(new Request("http://x/", { method: "POST" }))).toEqual({});
  });
});

describe("errorResponse", () => {
  it("maps service errors to the envelope with their status, field and issues", async () => {
    const res = errorResponse(new ServiceError("invalid_policy", "tiers[0].weight: too big", { issues: [{ path: "tiers[0].weight", message: "too big" }] }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: "invalid_policy", message: "tiers[0].weight: too big", field: "tiers[0].weight", issues: [{ path: "tiers[0].weight", message: "too big" }] },
    });
  });

  it("never leaks an unexpected error's message or stack", async () => {
    const original = console.error;
    console.error = () => undefined;
    try {
      const res = errorResponse(new Error("connect ECONNREFUSED 10.0.0.5:5432 secret-host"));
      expect(res.status).toBe(500);
      const text = await res.text();
      expect(text).not.toContain("secret-host");
      expect(JSON.parse(text)).toEqual({ error: { code: "internal", message: "internal error", field: null } });
    } finally {
      console.error = original;
    }
  });
});
