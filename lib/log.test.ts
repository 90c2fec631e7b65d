import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, REDACTED, scrub } from "./log";

/** A logger writing into a string, and the lines it wrote. */
function capture(settings: { level?: string; pretty?: boolean } = {}) {
  let text = "";
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  const logger = createLogger("test", { level: settings.level ?? "debug", pretty: settings.pretty ?? false, destination });
  return { logger, text: () => text, lines: () => text.split("\n").filter(Boolean) };
}

const API_KEY = "sk_live_Q2xvdWRzQXJlTm90U2VjcmV0cw";
const DEMO_KEY = "sk_test_acme_ci_0001";
const SERVICE_TOKEN = "sl_svc_9aVtq3LmZx7YwP2s";
const ADMIN_TOKEN = "sl_adm_Hk3LmZx7YwP2sQ9a";
const PASSWORD = "correct horse battery staple";
const CHOSEN_KEY = "operator-chosen-key-without-a-known-shape";
const DB_PASSWORD = "s3cretDbPass";

describe("logs never carry an API key, token, password or Authorization header", () => {
  it("redacts secret fields at any depth, in any case, and keeps everything else", () => {
    const { logger, lines } = capture();
    logger.info(
      {
        key: CHOSEN_KEY,
        apiKey: API_KEY,
        password: PASSWORD,
        headers: { Authorization: `Bearer ${SERVICE_TOKEN}`, "x-api-key": DEMO_KEY, "X-Sluice-Token": SERVICE_TOKEN, accept: "application/json" },
        req: { headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString("base64")}`, cookie: "next-auth.session-token=abc" } },
        nested: { deeper: [{ token: ADMIN_TOKEN, service_token: SERVICE_TOKEN, tenant: "acme" }] },
        operation: "GET /v1/orders/42",
      },
      "checked",
    );
    const line = lines()[0]!;
    for (const secret of [CHOSEN_KEY, API_KEY, DEMO_KEY, SERVICE_TOKEN, ADMIN_TOKEN, PASSWORD, "next-auth.session-token=abc"]) {
      expect(line).not.toContain(secret);
    }
    interface Line {
      [field: string]: unknown;
      headers: Record<string, string>;
      req: { headers: Record<string, string> };
      nested: { deeper: Record<string, string>[] };
    }
    const parsed = JSON.parse(line) as Line;
    expect(parsed.key).toBe(REDACTED);
    expect(parsed.apiKey).toBe(REDACTED);
    expect(parsed.password).toBe(REDACTED);
    expect(parsed.headers).toEqual({ Authorization: REDACTED, "x-api-key": REDACTED, "X-Sluice-Token": REDACTED, accept: "application/json" });
    expect(parsed.req.headers).toEqual({ authorization: REDACTED, cookie: REDACTED });
    expect(parsed.nested.deeper[0]).toEqual({ token: REDACTED, service_token: REDACTED, tenant: "acme" });
    expect(parsed.operation).toBe("GET /v1/orders/42");
    expect(parsed).toMatchObject({ level: "info", component: "test", msg: "checked" });
    expect(typeof parsed.time).toBe("string");
  });

  it("scrubs secret-shaped text from messages, string fields, errors and child bindings", () => {
    const { logger, text } = capture();
    logger.warn(`refused Authorization: Bearer ${SERVICE_TOKEN} for ${API_KEY}`);
    logger.info({ detail: `retrying postgresql://sluice:${DB_PASSWORD}@db.internal:5432/sluice` }, "database");
    logger.error({ err: new Error(`lookup failed for ${DEMO_KEY} with ${ADMIN_TOKEN}`) }, "lookup failed");
    logger.error(new Error(`token ${SERVICE_TOKEN} rejected`));
    logger.child({ caller: `Bearer ${ADMIN_TOKEN}`, token: SERVICE_TOKEN }).info("child");
    const out = text();
    for (const secret of [SERVICE_TOKEN, API_KEY, DB_PASSWORD, DEMO_KEY, ADMIN_TOKEN]) expect(out).not.toContain(secret);
    expect(out).toContain(`Bearer ${REDACTED}`);
    expect(out).toContain(`postgresql://sluice:${REDACTED}@db.internal:5432/sluice`);
    expect(out).toContain("lookup failed");
    expect(out).toContain('"type":"Error"');
  });

  it("the pretty format (the demo's) redacts the same", () => {
    const { logger, text } = capture({ pretty: true });
    logger.info({ headers: { authorization: `Bearer ${SERVICE_TOKEN}` }, key: CHOSEN_KEY }, `saw ${API_KEY}`);
    const out = text();
    expect(out).toContain("saw");
    for (const secret of [SERVICE_TOKEN, CHOSEN_KEY, API_KEY]) expect(out).not.toContain(secret);
    expect(() => JSON.parse(out.trim())).toThrow();
  });

  it("scrub leaves ordinary text alone", () => {
    expect(scrub("policy v7 loaded; 3 keys, tenant acme, GET /v1/orders/42")).toBe("policy v7 loaded; 3 keys, tenant acme, GET /v1/orders/42");
  });
});

describe("LOG_LEVEL", () => {
  it("writes the level given and the more severe ones only", () => {
    const { logger, lines } = capture({ level: "warn" });
    logger.debug("d");
    logger.info("i");
    logger.warn("w");
    logger.error("e");
    expect(lines().map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(["w", "e"]);
  });

  it("defaults to the environment's LOG_LEVEL", () => {
    const before = process.env.LOG_LEVEL;
    process.env.LOG_LEVEL = "error";
    try {
      let text = "";
      const destination = new Writable({ write: (c: Buffer, _e, done) => ((text += c.toString()), done()) });
      const logger = createLogger("test", { destination, pretty: false });
      logger.warn("hidden");
      logger.error("shown");
      expect(text).not.toContain("hidden");
      expect(text).toContain("shown");
    } finally {
      if (before === undefined) delete process.env.LOG_LEVEL;
      else process.env.LOG_LEVEL = before;
    }
  });
});
