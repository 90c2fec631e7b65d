/** gRPC's status codes and a call's failure, shared by the server and the message gatherer. */
/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
export const GrpcStatus = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcStatusCode = (typeof GrpcStatus)[keyof typeof GrpcStatus];
export const GRPC_STATUS_NAMES: readonly string[] = Object.keys(GrpcStatus);

/** A call's failure: the status and its message (sent percent-encoded in `grpc-message`). */
export class GrpcError extends Error {
  constructor(
    readonly code: GrpcStatusCode,
    readonly details: string,
  ) {
    super(details);
    this.name = "GrpcError";
  }
}
