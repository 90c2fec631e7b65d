/**
 * A queue consumer paced by Sluice: per-tenant export jobs over RabbitMQ (amqplib), each tenant at
 * its tier's rate, and one tenant's backlog never starving another's.
 *
 * - Every tenant has its own queue (`<prefix>.<tenant>`, bound to a direct exchange by tenant), and
 *   its own consumer with prefetch 1. A tenant that must wait holds only its own next job: the
 *   others' consumers keep going. (With one shared queue, a backlog ahead of another tenant's job
 *   would have to be fetched, refused and requeued before that job was even seen.)
 * - Before each job the consumer asks `client.pace({ tenant, operation: "export" })`: a shaping
 *   limit's delay is waited there and the job runs; a denial says when to ask again, and the job
 *   stays unacknowledged until then — backpressure, not a failure. A job that can never pass
 *   (unknown tenant, suspended, a cost above the limit) is rejected without requeue, so a
 *   dead-letter exchange on the queue can keep it.
 * - Stopping cancels the consumers and abandons any wait; unacknowledged jobs go back to their
 *   queues when the channel closes.
 *
 * Run it: `npx tsx examples/queue/export-worker.ts --amqp amqp://guest:guest@127.0.0.1:5672
 * --sluice http://127.0.0.1:8787 --token <service token> --tenants acme,globex`
 * (policy: examples/queue/export-policy.yaml); publish jobs with `publishExport`.
 */
import { parseArgs } from "node:util";
import { pathToFileURL } from "node:url";
import amqp from "amqplib";
import { SluiceClient } from "sluice/client";

export interface ExportJob {
  id: string;
  tenant: string;
}

export interface ExportWorkerOptions {
  connection: amqp.ChannelModel;
  client: SluiceClient;
  tenants: readonly string[];
  /** Names the exchange (`<prefix>`) and the queues (`<prefix>.<tenant>`). */
  prefix?: string;
  /** The export itself. */
  run: (job: ExportJob) => Promise<void>;
  /** Told about every job that could not be run (rejected, or malformed). */
  onRejected?: (job: ExportJob | null, why: string) => void;
}

export interface ExportWorker {
  stop(): Promise<void>;
}

const DEFAULT_PREFIX = "sluice-exports";

/** The exchange and one durable queue per tenant, bound by routing key = tenant. */
export async function declareExportQueues(channel: amqp.Channel, tenants: readonly string[], prefix = DEFAULT_PREFIX): Promise<void> {
  await channel.assertExchange(prefix, "direct", { durable: true });
  for (const tenant of tenants) {
    const queue = `${prefix}.${tenant}`;
    await channel.assertQueue(queue, { durable: true });
    await channel.bindQueue(queue, prefix, tenant);
  }
}

export function publishExport(channel: amqp.Channel, job: ExportJob, prefix = DEFAULT_PREFIX): boolean {
  return channel.publish(prefix, job.tenant, Buffer.from(JSON.stringify(job)), { persistent: true, contentType: "application/json" });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}

function parseJob(content: Buffer, tenant: string): ExportJob | null {
  try {
    const job = JSON.parse(content.toString("utf8")) as Partial<ExportJob>;
    return typeof job.id === "string" && job.tenant === tenant ? { id: job.id, tenant } : null;
  } catch {
    return null;
  }
}

export async function startExportWorker(options: ExportWorkerOptions): Promise<ExportWorker> {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const channel = await options.connection.createChannel();
  await declareExportQueues(channel, options.tenants, prefix);
  // Per consumer (not per channel): each tenant has at most one job in hand.
  await channel.prefetch(1, false);
  const stopping = new AbortController();
  const consumers: string[] = [];

  for (const tenant of options.tenants) {
    const { consumerTag } = await channel.consume(`${prefix}.${tenant}`, (message) => {
      if (!message) return;
      void handle(tenant, message);
    });
    consumers.push(consumerTag);
  }

  async function handle(tenant: string, message: amqp.ConsumeMessage): Promise<void> {
    const job = parseJob(message.content, tenant);
    if (!job) {
      options.onRejected?.(null, "malformed job");
      channel.nack(message, false, false);
      return;
    }
    while (!stopping.signal.aborted) {
      const paced = await options.client.pace({ tenant, operation: "export" }, { signal: stopping.signal }).catch(() => null);
      if (paced === null) return; // stopping: the job goes back to the queue with the channel
      if (paced.allowed) {
        await options.run(job);
        channel.ack(message);
        return;
      }
      if (paced.retryAfterMs === null) {
        options.onRejected?.(job, paced.answer.reason);
        channel.nack(message, false, false);
        return;
      }
      await sleep(paced.retryAfterMs, stopping.signal);
    }
  }

  return {
    async stop() {
      stopping.abort();
      for (const tag of consumers) await channel.cancel(tag).catch(() => undefined);
      await channel.close().catch(() => undefined);
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      amqp: { type: "string", default: "amqp://guest:guest@127.0.0.1:5672" },
      sluice: { type: "string", default: "http://127.0.0.1:8787" },
      token: { type: "string" },
      tenants: { type: "string" },
    },
  });
  if (!values.token || !values.tenants) throw new Error("usage: export-worker.ts --token <service token> --tenants a,b [--amqp URL] [--sluice URL]");
  const connection = await amqp.connect(values.amqp);
  const client = new SluiceClient({ url: values.sluice, token: values.token, timeoutMs: 200, onError: "closed" });
  const worker = await startExportWorker({
    connection,
    client,
    tenants: values.tenants.split(","),
    run: async (job) => void process.stdout.write(`${new Date().toISOString()} exported ${job.tenant}/${job.id}\n`),
    onRejected: (job, why) => void process.stderr.write(`rejected ${job ? `${job.tenant}/${job.id}` : "a malformed job"}: ${why}\n`),
  });
  process.once("SIGINT", () => void worker.stop().then(() => connection.close()));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
