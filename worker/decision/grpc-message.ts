/**
 * One unary gRPC request message gathered from its DATA frames: a 5-byte header (compressed flag,
 * big-endian length), then that many bytes. What a hostile client can make this cost is bounded:
 *
 * - each byte is copied at most once. The common case (the whole message in one DATA frame) is a
 *   view of that frame, no copy; otherwise the buffer is allocated once, from the length the
 *   header announces, and every frame is copied into place. (Gathering by concatenating what has
 *   arrived with each new frame costs O(n²): 64 KiB in 1-byte frames cost 1.7 s of CPU, #30.5.)
 * - the length is checked against `maxMessageBytes` as soon as the header is complete, before any
 *   of the message is read, and announced to `reserve` (the connection's byte budget), which may
 *   refuse it;
 * - nothing is decoded here: the bytes go to the handler only once the call is admitted and whole.
 */
import { GrpcError, GrpcStatus } from "./grpc-status";

export interface MessageGatherOptions {
  maxMessageBytes: number;
  /** The unary method's path, for messages. */
  path: string;
  /** Called once with the announced length; false refuses the message (RESOURCE_EXHAUSTED). */
  reserve(bytes: number): boolean;
}

export class MessageGather {
  /** The 5-byte header, when it arrives split over frames (it may come one byte per frame). */
  private header: Buffer | null = null;
  private headerBytes = 0;
  private length = -1;
  private body: Buffer | null = null;
  private bodyBytes = 0;
  /** Bytes after the message: a second message (refused) or the start of one (truncated). */
  private extraBytes = 0;

  constructor(private readonly options: MessageGatherOptions) {}

  /** Bytes reserved for the message so far (0 until its header is complete). */
  get reservedBytes(): number {
    return Math.max(0, this.length);
  }

  /** Takes one DATA frame's bytes; throws a GrpcError for what the call must be refused with. */
  push(chunk: Buffer): void {
    let offset = 0;
    if (this.length < 0) {
      if (this.headerBytes === 0 && chunk.length >= 5) {
        // The common case: the header whole in the first frame, read in place.
        this.headerBytes = 5;
        offset = 5;
        this.start(chunk);
      } else {
        const header = (this.header ??= Buffer.alloc(5));
        const take = Math.min(5 - this.headerBytes, chunk.length);
        chunk.copy(header, this.headerBytes, 0, take);
        this.headerBytes += take;
        offset = take;
        if (this.headerBytes < 5) return;
        this.start(header);
      }
    }
    if (offset === chunk.length) return;
    const { length } = this;
    if (this.bodyBytes === length) return this.extra(chunk.length - offset);
    const take = Math.min(length - this.bodyBytes, chunk.length - offset);
    if (this.body === null && this.bodyBytes === 0 && take === length) {
      // The whole message in this frame: a view, no copy.
      this.body = chunk.subarray(offset, offset + take);
    } else {
      this.body ??= Buffer.allocUnsafe(length);
      chunk.copy(this.body, this.bodyBytes, offset, offset + take);
    }
    this.bodyBytes += take;
    if (offset + take < chunk.length) this.extra(chunk.length - offset - take);
  }

  /** The message, once the request has ended; throws a GrpcError when there is none or it is cut short. */
  finish(): Buffer {
    const { path } = this.options;
    if (this.headerBytes === 0) throw new GrpcError(GrpcStatus.UNIMPLEMENTED, `Received no request message for unary method ${path}`);
    if (this.length < 0 || this.bodyBytes < this.length || this.extraBytes > 0) throw new GrpcError(GrpcStatus.UNIMPLEMENTED, "Received a truncated request message");
    return this.body ?? Buffer.alloc(0);
  }

  /** The header is complete (its 5 bytes first in `header`): check the length, reserve it. */
  private start(header: Buffer): void {
    const { maxMessageBytes, path } = this.options;
    if (header[0] !== 0) throw new GrpcError(GrpcStatus.UNIMPLEMENTED, "Received a compressed message: only identity encoding is supported");
    const length = header.readUInt32BE(1);
    if (length > maxMessageBytes) throw new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${length} vs. ${maxMessageBytes})`);
    if (!this.options.reserve(length)) {
      throw new GrpcError(GrpcStatus.RESOURCE_EXHAUSTED, `Received more request bytes on one connection than it may hold (calls of ${path} unfinished)`);
    }
    this.length = length;
  }

  private extra(bytes: number): void {
    this.extraBytes += bytes;
    if (this.extraBytes >= 5) throw new GrpcError(GrpcStatus.UNIMPLEMENTED, `Received a second request message for unary method ${this.options.path}`);
  }
}
