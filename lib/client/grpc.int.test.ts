/**
 * The gRPC server interceptor in a real @grpc/grpc-js server, called by a real gRPC client over
 * loopback HTTP/2, against a real decision server. The denial's `grpc-status-details-bin` is
 * decoded with googleapis' own google/rpc protos (protobufjs), not with the interceptor's encoder.
 */
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import protobuf from "protobufjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../net/ports";
import { SluiceClient } from "./client";
import { sluiceInterceptor } from "./grpc";
import { type ClientTestServer, startDecisionServer } from "./testing/decision";

const json = {
  serialize: (value: unknown) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes: Buffer) => JSON.parse(bytes.toString("utf8")) as unknown,
};
const method = (name: string): grpc.MethodDefinition<unknown, unknown> => ({
  path: `/orders.v1.Orders/${name}`,
  requestStream: false,
  responseStream: false,
  requestSerialize: json.serialize,
  requestDeserialize: json.deserialize,
  responseSerialize: json.serialize,
  responseDeserialize: json.deserialize,
});
const ORDERS = { Get: method("Get"), Hold: method("Hold") };

let sluice: ClientTestServer;
const servers: grpc.Server[] = [];
let live: grpc.Client & Record<string, grpc.requestCallback<unknown> & ((...a: unknown[]) => grpc.ClientUnaryCall)>;
let closed: typeof live;
let handled = 0;
let Status: protobuf.Type;
let RetryInfo: protobuf.Type;

async function startServer(client: SluiceClient): Promise<number> {
  const server = new grpc.Server({ interceptors: [sluiceInterceptor({ client })] });
  server.addService(ORDERS, {
    Get: (call: grpc.ServerUnaryCall<{ id: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      handled++;
      cb(null, { id: call.request.id });
    },
    Hold: (call: grpc.ServerUnaryCall<{ ms: number }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
      handled++;
      setTimeout(() => cb(null, { held: true }), call.request.ms);
    },
  });
  servers.push(server);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, p) => (error ? reject(error) : resolve(p))),
  );
  return port;
}

beforeAll(async () => {
  sluice = await startDecisionServer(["grpc"]);
  const Client = grpc.makeGenericClientConstructor(ORDERS, "Orders");
  const livePort = await startServer(new SluiceClient({ url: sluice.url, token: sluice.token, timeoutMs: 2_000 }));
  const closedPort = await startServer(new SluiceClient({ url: `http://127.0.0.1:${await freePort()}`, token: "t", timeoutMs: 50, onError: "closed" }));
  live = new Client(`127.0.0.1:${livePort}`, grpc.credentials.createInsecure()) as typeof live;
  closed = new Client(`127.0.0.1:${closedPort}`, grpc.credentials.createInsecure()) as typeof live;
  const googleapis = path.resolve(import.meta.dirname, "../../node_modules/@grpc/grpc-js-xds/deps/googleapis");
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(googleapis, target));
  await root.load(["google/rpc/status.proto", "google/rpc/error_details.proto"]);
  Status = root.lookupType("google.rpc.Status");
  RetryInfo = root.lookupType("google.rpc.RetryInfo");
});

afterAll(async () => {
  live?.close();
  closed?.close();
  for (const s of servers) s.forceShutdown();
  await sluice?.stop();
});

interface Result {
  error: grpc.ServiceError | null;
  value: unknown;
  headers: grpc.Metadata | null;
}

function call(client: typeof live, name: "Get" | "Hold", request: unknown, key?: string): Promise<Result> {
  const metadata = new grpc.Metadata();
  if (key) metadata.set("x-api-key", key);
  return new Promise((resolve) => {
    let headers: grpc.Metadata | null = null;
    const c = client[name]!(request, metadata, { deadline: Date.now() + 10_000 }, (error: grpc.ServiceError | null, value: unknown) => resolve({ error, value, headers }));
    c.on("metadata", (m: grpc.Metadata) => (headers = m));
  });
}

describe("sluiceInterceptor (@grpc/grpc-js)", () => {
  it("lets five calls through with the RateLimit headers as metadata, then answers RESOURCE_EXHAUSTED with a google.rpc.RetryInfo delay", async () => {
    const key = sluice.keys("grpc").free;
    const before = handled;
    for (let i = 0; i < 5; i++) {
      const r = await call(live, "Get", { id: "7" }, key);
      expect(r.error).toBeNull();
      expect(r.value).toEqual({ id: "7" });
      expect(r.headers?.get("ratelimit-remaining")).toEqual([String(4 - i)]);
      expect(String(r.headers?.get("ratelimit")[0])).toMatch(new RegExp(`;r=${4 - i};t=\\d+$`));
    }
    const denied = await call(live, "Get", { id: "7" }, key);
    expect(handled - before).toBe(5);
    expect(denied.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(denied.error?.details).toMatch(/^rate limit exceeded; retry in \d+ s$/);
    const retryAfter = Number(denied.error!.metadata.get("retry-after")[0]);
    expect(retryAfter).toBeGreaterThan(0);
    const bin = denied.error!.metadata.get("grpc-status-details-bin")[0];
    expect(bin).toBeInstanceOf(Buffer);
    const status = Status.toObject(Status.decode(bin as Buffer), { longs: Number }) as { code: number; message: string; details: { type_url: string; value: Uint8Array }[] };
    expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(status.message).toBe(denied.error!.details);
    expect(status.details).toHaveLength(1);
    expect(status.details[0]!.type_url).toBe("type.googleapis.com/google.rpc.RetryInfo");
    // protobufjs names fields in camelCase (retry_delay → retryDelay).
    const info = RetryInfo.toObject(RetryInfo.decode(status.details[0]!.value), { longs: Number }) as { retryDelay: { seconds: number; nanos?: number } };
    expect(info.retryDelay.seconds).toBe(retryAfter);
    expect(info.retryDelay.nanos ?? 0).toBe(0);
  });

  it("UNAUTHENTICATED without a key or with an unknown one, PERMISSION_DENIED for a suspended tenant", async () => {
    expect((await call(live, "Get", { id: "1" })).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await call(live, "Get", { id: "1" }, "sk_test_nobody_00000001")).error?.code).toBe(grpc.status.UNAUTHENTICATED);
    const suspended = await call(live, "Get", { id: "1" }, sluice.keys("grpc").suspended);
    expect(suspended.error?.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(suspended.error?.metadata.get("grpc-status-details-bin")).toEqual([]);
  });

  it("UNAVAILABLE when the decision API is down and onError is closed", async () => {
    const r = await call(closed, "Get", { id: "1" }, sluice.keys("grpc").free2);
    expect(r.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(r.error?.details).toMatch(/rate limiter is unavailable/);
  });

  it("holds a concurrency lease for the call and releases it when the call ends", async () => {
    const key = sluice.keys("grpc").conc;
    const holding = call(live, "Hold", { ms: 600 }, key);
    await new Promise((r) => setTimeout(r, 250));
    const second = await call(live, "Hold", { ms: 0 }, key);
    expect(second.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await holding).error).toBeNull();
    let after: Result | null = null;
    for (let i = 0; i < 40 && after?.error !== null; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 50));
      after = await call(live, "Hold", { ms: 0 }, key);
    }
    expect(after?.error).toBeNull();
  });
});
