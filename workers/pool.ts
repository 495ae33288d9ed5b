/**
 * Executors: where registry tasks run. PoolExecutor sends them to a Piscina pool of workers that share
 * the LMDB store; InlineExecutor runs them on the calling thread (--workers=0). core/ never imports
 * Piscina: the server only sees the Executor interface.
 */
import { Piscina } from 'piscina';
import type { Registry } from '../core/registry/registry.js';
import { type ApiTask, type ApiTaskResult, type Executor, movableBytes } from '../core/registry/task.js';
import type { StoreTimingSink } from '../core/storage/timed-store.js';
import type { WorkerSettings } from './api.worker.js';

export class InlineExecutor implements Executor {
  constructor(private readonly registry: Registry) {}
  run(task: ApiTask): Promise<ApiTaskResult> {
    return this.registry.run(task);
  }
  async close(): Promise<void> {}
}

export class PoolExecutor implements Executor {
  private readonly pool: Piscina;
  constructor(threads: number, settings: WorkerSettings, private readonly timings?: StoreTimingSink) {
    this.pool = new Piscina({
      filename: new URL('./api.worker.js', import.meta.url).href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      // Tasks wait on durable commits: many in flight per worker lets LMDB group them into one fsync.
      concurrentTasksPerWorker: 256,
      atomics: 'disabled',
      workerData: settings,
    });
  }

  async run(task: ApiTask): Promise<ApiTaskResult> {
    const body = task.body;
    const r: ApiTaskResult = await this.pool.run(task, movableBytes(body) ? { transferList: [body.buffer as ArrayBuffer] } : {});
    if (r.storeTimings) {
      if (this.timings) for (const [op, type, seconds] of r.storeTimings) this.timings.observe(op, type, seconds);
      delete r.storeTimings;
    }
    return r;
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
