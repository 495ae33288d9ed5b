/**
 * Reinvocation, as upstream's admission reinvoker has it: when a mutating plugin changed the object,
 * the mutating chain runs once more (one more pass, never a third). In that second pass the in-tree
 * plugins run again as they are (their work is idempotent), while the webhooks and mutating policies
 * are called again only where they asked for it (reinvocationPolicy IfNeeded) and saw the object
 * before a later change. Each of those two plugins keeps its own ReinvocationTracker in the request's
 * ReinvocationContext, keyed by the plugin's name.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ApiObject } from '../api/types.js';

export class ReinvocationContext {
  /** Whether the chain is in its second pass. */
  isReinvoke = false;
  /** Set by a plugin whose call changed the object: the chain runs once more. */
  shouldReinvoke = false;
  private readonly trackers = new Map<string, ReinvocationTracker>();

  trackerFor(plugin: string): ReinvocationTracker {
    let t = this.trackers.get(plugin);
    if (!t) this.trackers.set(plugin, (t = new ReinvocationTracker(this)));
    return t;
  }
}

/** One plugin's view of reinvocation: which of its calls (webhooks, policy bindings) run again. */
export class ReinvocationTracker {
  /** The object as this plugin left it at the end of its last pass. */
  private lastOutput: ApiObject | undefined;
  /** IfNeeded calls made since the last change. */
  private previouslyInvoked = new Set<string>();
  /** Calls the second pass makes. */
  private readonly toReinvoke = new Set<string>();

  constructor(private readonly ctx: ReinvocationContext) {}

  /** At the start of the plugin's pass: in the second one, a change since its last output (by a later plugin) re-arms its IfNeeded calls. */
  begin(object: ApiObject | undefined): void {
    if (this.ctx.isReinvoke && !isDeepStrictEqual(this.lastOutput, object)) this.requireReinvokingPreviouslyInvoked();
  }

  /** At the end of the plugin's pass. */
  end(object: ApiObject | undefined): void {
    this.lastOutput = object === undefined ? undefined : structuredClone(object);
  }

  /** Whether the call `key` is left out of this pass (the second pass makes only the re-armed ones). */
  skips(key: string): boolean {
    return this.ctx.isReinvoke && !this.toReinvoke.has(key);
  }

  /** After the call `key`: a change re-arms the IfNeeded calls made before it and asks for a second pass. */
  invoked(key: string, changed: boolean, ifNeeded: boolean): void {
    if (changed) {
      this.requireReinvokingPreviouslyInvoked();
      this.ctx.shouldReinvoke = true;
    }
    if (ifNeeded) this.previouslyInvoked.add(key);
  }

  private requireReinvokingPreviouslyInvoked(): void {
    for (const k of this.previouslyInvoked) this.toReinvoke.add(k);
    this.previouslyInvoked = new Set();
  }
}
