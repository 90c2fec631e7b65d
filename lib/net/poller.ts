/**
 * The poll loop of the policy sources (Redis and Postgres) and of the single-node key index: `load`
 * runs at start, then again `pollMs` after each run ended, one run at a time. A refresh asked for
 * during a run joins it; with `rerun`, it also makes the run read once more afterwards (a PUBLISH
 * that arrived mid-read may name a newer version than the one being read).
 */
export class Poller {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stoppedFlag = false;

  constructor(
    private readonly load: () => Promise<void>,
    private readonly pollMs: number,
    private readonly rerun = false,
  ) {}

  get stopped(): boolean {
    return this.stoppedFlag;
  }

  async start(): Promise<void> {
    await this.refresh();
    this.schedule();
  }

  /** Runs `load` now, or joins the run in progress. `load` must not throw. */
  refresh(): Promise<void> {
    if (this.running) {
      if (this.rerun) this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.load();
      } while (this.again && !this.stoppedFlag);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private schedule(): void {
    if (this.stoppedFlag) return;
    this.timer = setTimeout(() => {
      void this.refresh().finally(() => this.schedule());
    }, this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    this.stoppedFlag = true;
    if (this.timer) clearTimeout(this.timer);
  }
}
