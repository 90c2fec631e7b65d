/**
 * Free TCP ports on 127.0.0.1, for the demo, the embedded PostgreSQL, tests and benchmarks (never
 * the decision path). A port found free can be taken by someone else before it is used: callers
 * that start a server on it should fail loudly, not retry silently.
 */
import { createServer } from "node:net";

/** Whether nothing listens on 127.0.0.1:port right now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ port, host: "127.0.0.1", exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** A free port: `preferred` when it is free, else one the OS picks. */
export async function freePort(preferred?: number): Promise<number> {
  if (preferred !== undefined && (await portIsFree(preferred))) return preferred;
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ port: 0, host: "127.0.0.1" }, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error("no free TCP port on 127.0.0.1"))));
    });
  });
}
