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

const script = (parser: string): string => `
import sys, json
from ${parser} import text_string_to_metric_families
out = []
for f in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": f.name, "type": f.type, "help": f.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value if s.value == s.value and abs(s.value) != float("inf") else str(s.value)} for s in f.samples]})
json.dump(out, sys.stdout)
`;

export function parsePrometheusText(text: string): Map<string, PromFamily> {
  return parseWith('prometheus_client.parser', text);
}

/** The same for OpenMetrics, with the client's OpenMetrics parser (stricter: `# EOF`, counters' `_total`, bucket rules). */
export function parseOpenMetricsText(text: string): Map<string, PromFamily> {
  return parseWith('prometheus_client.openmetrics.parser', text);
}

function parseWith(parser: string, text: string): Map<string, PromFamily> {
  const r = spawnSync('/usr/bin/python3', ['-c', script(parser)], { input: text, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`the Prometheus parser (${parser}) refused the scrape: ${r.stderr}`);
  const fams = JSON.parse(r.stdout) as PromFamily[];
  // NaN and infinities cross as Python writes them: nan, inf, -inf
  const special: Record<string, number> = { nan: NaN, inf: Infinity, '-inf': -Infinity };
  for (const f of fams) for (const m of f.samples) if (typeof m.value === 'string') m.value = special[m.value] ?? Number(m.value);
  return new Map(fams.map((f) => [f.name, f]));
}

/** The value of the first sample named `sample` whose labels include `labels` (0 when there is none). */
export function sampleValue(fams: Map<string, PromFamily>, sample: string, labels: Record<string, string> = {}): number {
  const family = fams.get(sample) ?? fams.get(sample.replace(/_(total|count|sum|bucket)$/, ''));
  const s = family?.samples.find((m) => m.name === sample && Object.entries(labels).every(([k, v]) => m.labels[k] === v));
  return s ? s.value : 0;
}

/**
 * The sample lines of an exposition whose value is not spelled as both formats spell values: a decimal
 * number, or exactly `NaN`, `+Inf` or `-Inf`. The parsers above read values with Python's float(), which
 * takes any case (`Nan`, `nan`, `inf`), as Go's ParseFloat in Prometheus itself does; the text format's
 * documentation and OpenMetrics name only these spellings, and stricter scrapers refuse the others.
 * Returns the offending lines (none when all is well).
 */
export function misspelledValues(text: string): string[] {
  const bad: string[] = [];
  const VALUE = /^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$/;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const rest = afterNameAndLabels(line);
    const value = rest?.trimStart().split(' ')[0];
    if (value === undefined || !VALUE.test(value)) bad.push(line);
  }
  return bad;
}

/** What follows a sample's name and labels (label values may hold spaces, braces and escaped quotes). */
function afterNameAndLabels(line: string): string | undefined {
  const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!name) return undefined;
  let i = name[0].length;
  if (line[i] !== '{') return line.slice(i);
  let quoted = false;
  for (i++; i < line.length; i++) {
    const c = line[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === '}') return line.slice(i + 1);
  }
  return undefined;
}
