/**
 * Parses a scrape with the Prometheus project's own Python client parser (Debian's
 * python3-prometheus-client, installed by `npm test`): the text format as Prometheus reads it.
 */
import { spawnSync } from 'node:child_process';

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  /** The family name (counters without `_total`, as the parser names them). */
  name: string;
  type: string;
  help: string;
  samples: PromSample[];
}

const SCRIPT = `
import sys, json
from prometheus_client.parser import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "help": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value if s.value == s.value and abs(s.value) != float("inf") else str(s.value)} for s in f.samples]})
json.dump(out, sys.stdout)
`;

export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const r = spawnSync('/usr/bin/python3', ['-c', SCRIPT], { input: text, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`the Prometheus parser refused the scrape: ${r.stderr}`);
  const fams = JSON.parse(r.stdout) as PromFamily[];
  // NaN and infinities cross as text
  for (const f of fams) for (const m of f.samples) if (typeof m.value === 'string') m.value = Number(m.value);
  return new Map(fams.map((f) => [f.name, f]));
}

/** The value of the first sample named `sample` whose labels include `labels` (0 when there is none). */
export function sampleValue(fams: Map<string, PromFamily>, sample: string, labels: Record<string, string> = {}): number {
  const family = fams.get(sample) ?? fams.get(sample.replace(/_(total|count|sum|bucket)$/, ''));
  const s = family?.samples.find((m) => m.name === sample && Object.entries(labels).every(([k, v]) => m.labels[k] === v));
  return s ? s.value : 0;
}
