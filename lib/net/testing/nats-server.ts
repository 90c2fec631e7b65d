/**
 * A throwaway `nats-server` with JetStream (Debian's package, /usr/sbin on PATH or not) on a free
 * port with its own storage directory, for tests that cut the link (kill it) and heal it (start it
 * again on the same port and directory: the stream and its durable consumers survive, as on a real
 * server's restart). Every process started here is killed when this process exits.
 */
import { existsSync } from "node:fs";
import { type OwnServer, spawnOwned, startOwnServer } from "../../processes/own-server";

const BINARY = ["/usr/sbin/nats-server", "/usr/bin/nats-server"].find((p) => existsSync(p)) ?? "nats-server";

/** kill() cuts the link; start() brings it back on the same port and storage. */
export type OwnNats = OwnServer;

export function startOwnNats(): Promise<OwnNats> {
  const spawn = (port: number, dir: string) => spawnOwned(BINARY, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir]);
  return startOwnServer({ name: "nats", spawn, greeting: { startsWith: "INFO" } });
}
