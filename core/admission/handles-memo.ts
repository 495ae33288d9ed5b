/**
 * What a plugin computed for one operation on one resource (whether it handles it, which of its
 * webhooks' rules match), kept per resource type and `operation/subresource` (and any further key)
 * until the plugin's configuration changes: asked on every write's routing and admission, answered
 * by two map lookups instead of walking rules.
 */
import type { ResourceType } from '../registry/resource-type.js';
import type { AdmissionOperation } from './attributes.js';

export class ResourceMemo<V> {
  private byType = new WeakMap<ResourceType, Map<string, V>>();

  get(op: AdmissionOperation, rt: ResourceType, subresource: string, compute: () => V, extra?: string): V {
    let m = this.byType.get(rt);
    if (!m) this.byType.set(rt, (m = new Map()));
    const key = subresource ? (extra === undefined ? `${op}/${subresource}` : `${op}/${subresource}|${extra}`) : extra === undefined ? op : `${op}|${extra}`;
    let v = m.get(key);
    if (v === undefined) m.set(key, (v = compute()));
    return v;
  }

  clear(): void {
    this.byType = new WeakMap();
  }
}
