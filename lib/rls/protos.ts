/**
 * Envoy's rate limit service protocol (`envoy.service.ratelimit.v3.RateLimitService`) and gRPC's
 * health protocol, loaded at run time with @grpc/proto-loader from the protos that ship in the
 * registry package @grpc/grpc-js-xds (`deps/envoy-api`, with `xds`, `googleapis` and
 * `protoc-gen-validate` beside it), so no Envoy proto is copied into this repository.
 *
 * Two fields the bundled copy is too old to have are added to the loaded types, exactly as
 * envoyproxy/data-plane-api defines them today, so that what current Envoys send is decoded
 * instead of silently dropped as an unknown field:
 * - `RateLimitDescriptor.hits_addend` (field 3, `google.protobuf.UInt64Value`): the descriptor's
 *   own cost, set by a route's `rate_limits[].hits_addend`;
 * - `RateLimitResponse.RateLimit.Unit.WEEK` (= 7).
 * An older Envoy or client built from the bundled protos interoperates unchanged: it never sends
 * field 3, and reads a WEEK unit as an unknown enum value.
 *
 * Only tests, the benchmark and the Envoy filter model load this module (they build their gRPC
 * clients and check the hand-written codec against these definitions); production never does: the
 * decision server speaks through lib/rls/decode.ts, encode.ts and messages.ts, so @grpc/grpc-js,
 * @grpc/proto-loader, @grpc/grpc-js-xds and protobufjs are dev dependencies (scripts/build.test.ts
 * fails the build if a compiled process imports one).
 */
import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

import { HEALTH_SERVICE, RLS_SERVICE, type RlsRequestMessage, type RlsResponseMessage } from "./messages";

export * from "./messages";

/** What proto-loader hands the handlers: field names as in the .proto, enums as names, 64-bit ints as numbers, absent fields absent. */
const LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: true };

/** The four directories of Envoy's protos inside @grpc/grpc-js-xds. */
export function envoyProtoDirs(): string[] {
  const require = createRequire(import.meta.url);
  const deps = path.join(path.dirname(require.resolve("@grpc/grpc-js-xds/package.json")), "deps");
  return ["envoy-api", "xds", "googleapis", "protoc-gen-validate"].map((d) => path.join(deps, d));
}

function rootWithIncludes(includeDirs: readonly string[]): protobuf.Root {
  const root = new protobuf.Root();
  const fallback = root.resolvePath.bind(root);
  // The same lookup proto-loader's loadSync does with `includeDirs`.
  root.resolvePath = (origin, target) => {
    if (path.isAbsolute(target)) return target;
    for (const dir of includeDirs) {
      const candidate = path.join(dir, target);
      try {
        accessSync(candidate, constants.R_OK);
        return candidate;
      } catch {
        // not in this directory
      }
    }
    return fallback(origin, target);
  };
  return root;
}

let rlsDefinition: protoLoader.PackageDefinition | null = null;

/** The RLS package definition (loaded once, ~0.2 s). */
export function rlsPackageDefinition(): protoLoader.PackageDefinition {
  if (rlsDefinition) return rlsDefinition;
  const root = rootWithIncludes(envoyProtoDirs());
  root.loadSync(["envoy/service/ratelimit/v3/rls.proto", "google/protobuf/wrappers.proto"], { keepCase: true });
  root.resolveAll();
  const descriptor = root.lookupType("envoy.extensions.common.ratelimit.v3.RateLimitDescriptor");
  if (!descriptor.fieldsById[3]) descriptor.add(new protobuf.Field("hits_addend", 3, "google.protobuf.UInt64Value"));
  const unit = root.lookupEnum("envoy.service.ratelimit.v3.RateLimitResponse.RateLimit.Unit");
  if (unit.values.WEEK === undefined) unit.add("WEEK", 7);
  rlsDefinition = protoLoader.fromJSON(root.toJSON(), LOADER_OPTIONS);
  return rlsDefinition;
}

/**
 * gRPC's standard health service (grpc/grpc-proto grpc/health/v1/health.proto), declared here
 * because no installed package ships it. `Watch` is part of the protocol; Sluice implements `Check`.
 */
const HEALTH_JSON: protobuf.INamespace = {
  nested: {
    grpc: {
      nested: {
        health: {
          nested: {
            v1: {
              nested: {
                HealthCheckRequest: { fields: { service: { type: "string", id: 1 } } },
                HealthCheckResponse: {
                  fields: { status: { type: "ServingStatus", id: 1 } },
                  nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } } },
                },
                Health: {
                  methods: {
                    Check: { requestType: "HealthCheckRequest", responseType: "HealthCheckResponse", comment: "" },
                    Watch: { requestType: "HealthCheckRequest", responseType: "HealthCheckResponse", responseStream: true, comment: "" },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};

let healthDefinition: protoLoader.PackageDefinition | null = null;

export function healthPackageDefinition(): protoLoader.PackageDefinition {
  healthDefinition ??= protoLoader.fromJSON(HEALTH_JSON, LOADER_OPTIONS);
  return healthDefinition;
}

function serviceOf(definition: protoLoader.PackageDefinition, name: string): grpc.ServiceDefinition {
  const service = definition[name];
  if (!service || !("ShouldRateLimit" in service || "Check" in service)) throw new Error(`${name} is not in the loaded protos`);
  return service as grpc.ServiceDefinition;
}

export function rlsServiceDefinition(): grpc.ServiceDefinition {
  return serviceOf(rlsPackageDefinition(), RLS_SERVICE);
}

export function healthServiceDefinition(): grpc.ServiceDefinition {
  return serviceOf(healthPackageDefinition(), HEALTH_SERVICE);
}

/** A client of the rate limit service built from the same definitions (tests, bench, the Envoy model). */
export function rlsClient(address: string, options: grpc.ChannelOptions = {}): grpc.Client & {
  ShouldRateLimit: (
    request: RlsRequestMessage,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: RlsResponseMessage) => void,
  ) => grpc.ClientUnaryCall;
} {
  const Client = grpc.makeClientConstructor(rlsServiceDefinition(), RLS_SERVICE);
  return new Client(address, grpc.credentials.createInsecure(), options) as never;
}

export function healthClient(address: string): grpc.Client & {
  Check: (
    request: { service?: string },
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: { status?: string }) => void,
  ) => grpc.ClientUnaryCall;
} {
  const Client = grpc.makeClientConstructor(healthServiceDefinition(), HEALTH_SERVICE);
  return new Client(address, grpc.credentials.createInsecure()) as never;
}
