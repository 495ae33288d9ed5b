/**
 * One server's metrics out of several acceptor processes (node:cluster). Each process hands over a
 * snapshot of its families as plain data (it crosses the cluster IPC channel as JSON); the process
 * answering the scrape merges them with prom-client's cluster aggregation (AggregatorRegistry), each
 * family by the aggregator it was declared with, and writes the result with the same writer as a
 * single process (expositionText).
 */
import { type Aggregator, AggregatorRegistry, type Registry, type RegistryContentType } from 'prom-client';
import type { ExposedFamily } from './registry.js';

/** A sample value as JSON can carry it: NaN and the infinities (JSON writes them as null) by their exposition spelling. */
export type SnapshotValue = number | 'NaN' | '+Inf' | '-Inf';

export interface SampleSnapshot {
  /** The sample's name when it is not the family's (a histogram's _bucket, _sum and _count). */
  metricName?: string;
  /** A histogram's series labels come before its `le`, the order they are written in. */
  labels: Record<string, string | number>;
  value: SnapshotValue;
}

export interface FamilySnapshot {
  name: string;
  /** As the endpoint prints it: stability class and deprecation prefix included. */
  help: string;
  type: string;
  aggregator: Aggregator;
  values: SampleSnapshot[];
}

const snapshotValue = (v: number): SnapshotValue => (Number.isFinite(v) ? v : Number.isNaN(v) ? 'NaN' : v > 0 ? '+Inf' : '-Inf');

const valueOf = (v: SnapshotValue): number => (typeof v === 'number' ? v : v === 'NaN' ? NaN : v === '+Inf' ? Infinity : -Infinity);

/** The families of a registry after its collectors ran (what its exposition would print now). */
export async function familySnapshots(registry: Registry<RegistryContentType>): Promise<FamilySnapshot[]> {
  const families = (await registry.getMetricsAsJSON()) as unknown as (Omit<FamilySnapshot, 'values'> & { values: { metricName?: string; labels: Record<string, string | number>; value: number }[] })[];
  return families.map((f) => ({
    name: f.name,
    help: f.help,
    type: f.type,
    aggregator: f.aggregator,
    values: f.values.map((v) => ({ ...(v.metricName === undefined ? {} : { metricName: v.metricName }), labels: v.labels, value: snapshotValue(v.value) })),
  }));
}

/**
 * The families of several processes combined, in the order the first process lists them (a family or
 * label set only a later process has comes after). Samples of one name and label set combine by the
 * family's aggregator; a family whose aggregator is 'omit' is left out.
 */
export function mergeFamilies(perProcess: readonly (readonly FamilySnapshot[])[]): ExposedFamily[] {
  const numeric = perProcess.map((families) => families.map((f) => ({ ...f, values: f.values.map((v) => ({ ...v, value: valueOf(v.value) })) })));
  // aggregate() registers plain data whose get() answers at once (no collector runs)
  return AggregatorRegistry.aggregate(numeric)
    .getMetricsAsArray()
    .map((m) => (m as unknown as { get(): ExposedFamily }).get());
}
