// Restarts of the language server run one at a time. A restart requested while one is running is
// queued once: however many requests arrive meanwhile, exactly one more restart follows, and it
// sees the latest settings (as ruff-vscode does). Pure logic, no `vscode` import.

export class RestartQueue {
  private running = false;
  /** Resolves when the queued run has finished; set while a run is queued. */
  private queued: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    private readonly restart: () => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Resolves when the restart that covers this request has finished (errors go to onError). */
  request(): Promise<void> {
    if (this.running) {
      if (this.queued === undefined) {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        this.queued = { promise, resolve };
      }
      return this.queued.promise;
    }
    return this.run();
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** One restart; when it ends, the queued one (if any) starts before `running` is cleared. */
  private async run(): Promise<void> {
    this.running = true;
    await this.runOnce();
    const next = this.queued;
    if (next === undefined) {
      this.running = false;
      return;
    }
    this.queued = undefined;
    void this.run().then(next.resolve);
  }

  private async runOnce(): Promise<void> {
    try {
      await this.restart();
    } catch (error) {
      this.onError(error);
    }
  }
}
