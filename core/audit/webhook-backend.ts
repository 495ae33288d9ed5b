/**
 * The webhook backend (--audit-webhook-config-file, a kubeconfig naming the remote): events are POSTed
 * as an audit.svc.io/v1 EventList.
 *
 * `batch` (default, as upstream): events wait in a buffer of --audit-webhook-batch-buffer-size; a
 * batch leaves when it holds --audit-webhook-batch-max-size events or its first event has waited
 * --audit-webhook-batch-max-wait, at most --audit-webhook-batch-throttle-qps batches a second (burst
 * --audit-webhook-batch-throttle-burst). A full buffer drops the event and counts it; the request is
 * never held. `blocking`: each event is sent alone and the request waits for its RequestReceived
 * event to be sent; `blocking-strict` also refuses the request (500) when that send failed.
 * Failed sends are retried with exponential backoff from --audit-webhook-initial-backoff; a batch that
 * still fails is logged and counted, never fatal.
 */
import { WebhookClient, WebhookStatusError, withBackoff } from '../webhook/client.js';
import { loadWebhookKubeconfig, WebhookConfigError } from '../webhook/kubeconfig.js';
import { StartError } from '../api/start-error.js';
import type { Backend } from './backend.js';
import { FailureLog } from './log-backend.js';
import { auditStats } from './stats.js';

export interface WebhookBackendOptions {
  configFile: string;
  mode: 'batch' | 'blocking' | 'blocking-strict';
  bufferSize: number;
  maxBatchSize: number;
  maxBatchWaitMs: number;
  throttleEnable: boolean;
  throttleQPS: number;
  throttleBurst: number;
  initialBackoffMs: number;
}

export class WebhookStartError extends StartError {}

/** One POST's deadline (upstream's webhook client timeout). */
const SEND_TIMEOUT_MS = 30_000;
/** Attempts per batch and backoff growth, as upstream's webhook backoff. */
const ATTEMPTS = 5;
const BACKOFF_FACTOR = 1.5;
/** How long shutdown waits for sends under way before dropping their connections. */
const SHUTDOWN_GRACE_MS = 5_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

/** Whether a failed send is worth another try: the remote was unreachable, slow, or overloaded (not a 4xx). */
function retriable(e: unknown): boolean {
  if (e instanceof WebhookStatusError) return e.code === 429 || e.code >= 500;
  return e instanceof Error;
}

/** A token bucket: `qps` batches a second, `burst` at once. */
class Throttle {
  private tokens: number;
  private last = Date.now();
  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  async take(): Promise<void> {
    for (;;) {
      const now = Date.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(((1 - this.tokens) / this.qps) * 1000);
    }
  }
}

export class WebhookBackend implements Backend {
  readonly name = 'webhook' as const;
  readonly strict: boolean;
  private readonly client: WebhookClient;
  private buffer: string[] = [];
  private running: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private stopping = false;
  private readonly inflight = new Set<Promise<void>>();
  private readonly throttle: Throttle | undefined;
  private readonly failures = new FailureLog('webhook send failed');
  private readonly listHead: string;

  constructor(
    private readonly o: WebhookBackendOptions,
    readonly apiVersion: string,
  ) {
    try {
      this.client = new WebhookClient(loadWebhookKubeconfig(o.configFile));
    } catch (e) {
      if (e instanceof WebhookConfigError) throw new WebhookStartError(`--audit-webhook-config-file: ${e.message}`);
      throw e;
    }
    this.strict = o.mode === 'blocking-strict';
    if (o.throttleEnable && o.throttleQPS > 0) this.throttle = new Throttle(o.throttleQPS, Math.max(1, o.throttleBurst));
    this.listHead = `{"kind":"EventList","apiVersion":${JSON.stringify(apiVersion)},"metadata":{},"items":[`;
  }

  process(line: string): boolean | Promise<boolean> {
    if (this.o.mode !== 'batch') return this.sendBatch([line]);
    if (this.buffer.length >= this.o.bufferSize) {
      auditStats.errors.webhook++;
      auditStats.dropped.webhook++;
      this.failures.report(new Error('audit buffer queue blocked'), 1);
      return false;
    }
    this.buffer.push(line);
    if (!this.running) this.running = this.run();
    else if (this.buffer.length >= this.o.maxBatchSize) this.wake?.();
    return true;
  }

  /** Sends batches until the buffer is empty: a batch leaves full, or when its first event waited long enough. */
  private async run(): Promise<void> {
    while (this.buffer.length) {
      if (this.buffer.length < this.o.maxBatchSize && !this.stopping) await this.waitForBatch();
      const batch = this.buffer.splice(0, this.o.maxBatchSize);
      if (this.throttle && !this.stopping) await this.throttle.take();
      const sent = this.sendBatch(batch).then(() => undefined);
      this.inflight.add(sent);
      void sent.finally(() => this.inflight.delete(sent));
    }
    this.running = undefined;
  }

  private waitForBatch(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.o.maxBatchWaitMs);
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = () => {
        this.wake = undefined;
        done();
      };
    });
  }

  /** POSTs one EventList, retrying with backoff; true when the remote took it. */
  private async sendBatch(lines: readonly string[]): Promise<boolean> {
    // each line is a serialized event ending in \n
    const payload = Buffer.from(`${this.listHead}${lines.map((l) => l.slice(0, -1)).join(',')}]}`);
    try {
      await withBackoff(() => this.client.postBytes(payload, SEND_TIMEOUT_MS), {
        backoff: { initialMs: this.o.initialBackoffMs, factor: BACKOFF_FACTOR, attempts: ATTEMPTS },
        retriable: (e) => retriable(e) && !this.stopping,
      });
      auditStats.written.webhook += lines.length;
      return true;
    } catch (e) {
      auditStats.errors.webhook += lines.length;
      this.failures.report(e, lines.length);
      return false;
    }
  }

  async shutdown(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    while (this.running) await this.running;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...this.inflight]), new Promise((r) => (timer = setTimeout(r, SHUTDOWN_GRACE_MS)))]);
    clearTimeout(timer);
    this.client.close();
  }
}
