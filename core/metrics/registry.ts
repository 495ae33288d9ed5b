/**
 * A thin layer over prom-client that adds upstream's metric stability classes (spec "Versioning"
 * rule 8): the help text carries `[ALPHA]`, `[BETA]` or `[STABLE]`, a deprecated metric's help the
 * `(Deprecated from x.y)` prefix and a warning when it is registered, and a metric deprecated three
 * minor releases ago is hidden unless --show-hidden-metrics-for-version names the previous minor.
 *
 * Every metric is registered twice, in a Prometheus text registry and an OpenMetrics one, so a scrape
 * gets the format it asks for from the same samples. Labelled metrics hand out children cached by
 * their label values; counters and histograms count in plain numbers that a scrape collects, so a hot
 * path pays one Map lookup and an addition, not prom-client's label hashing.
 *
 * The exposition itself is written here (ExpositionRegistry), not by prom-client's formatter: that one
 * spells not-a-number `Nan`, which neither format has, and renames a counter shared by both registries
 * when it writes OpenMetrics (every later Prometheus text scrape lost the counter's `_total`).
 */
import { type Aggregator, Counter, Gauge, type Metric, Registry, type RegistryContentType } from 'prom-client';
import { goFloat } from '../api/go-format.js';

export type StabilityLevel = 'ALPHA' | 'BETA' | 'STABLE';

/** The release whose policy this server follows (metrics are hidden relative to it). */
export const CURRENT_MINOR: Readonly<{ major: number; minor: number }> = { major: 1, minor: 32 };

export interface MetricOpts {
  name: string;
  help: string;
  stability: StabilityLevel;
  labelNames?: readonly string[];
  /** `x.y`: the release the metric was deprecated in. */
  deprecatedVersion?: string;
}

export interface HistogramOpts extends MetricOpts {
  buckets: readonly number[];
}

/**
 * How one family's figures from the server's acceptor processes combine into the server's figure
 * (prom-client's cluster aggregators: by label set, 'sum', 'max', 'min', 'first', 'average').
 * Counters and histograms sum unless they count something every process counts alike; a gauge names
 * its aggregator, there is no default that fits every gauge.
 */
export interface CounterOpts extends MetricOpts {
  aggregator?: Aggregator;
}

export interface GaugeOpts extends MetricOpts {
  aggregator: Aggregator;
}

export class MetricsFlagError extends Error {}

/** `major.minor` of a version text (`1.29`, `1.29.0`, `v1.29`); undefined when it is not one. */
export function parseMinor(v: string): { major: number; minor: number } | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.\d+)?$/.exec(v.trim());
  return m ? { major: Number(m[1]), minor: Number(m[2]) } : undefined;
}

/**
 * Checks --show-hidden-metrics-for-version as upstream: empty, or exactly the previous minor release.
 * Returns whether hidden metrics are shown.
 */
export function showHiddenMetricsFor(value: string, current = CURRENT_MINOR): boolean {
  if (!value) return false;
  const v = parseMinor(value);
  const previous = `${current.major}.${current.minor - 1}`;
  if (!v || v.major !== current.major || v.minor !== current.minor - 1) {
    throw new MetricsFlagError(`--show-hidden-metrics-for-version must be omitted or have the value '${previous}'. Only the previous minor version is allowed`);
  }
  return true;
}

export type Visibility = 'shown' | 'hidden' | 'removed';

/**
 * Where a metric stands under the policy: deprecated three minors ago it is hidden (shown again by
 * the flag); deprecated earlier than that it is gone for good (upstream deletes it one release later).
 */
export function visibilityOf(deprecatedVersion: string | undefined, current = CURRENT_MINOR): Visibility {
  if (!deprecatedVersion) return 'shown';
  const d = parseMinor(deprecatedVersion);
  if (!d) throw new Error(`metric deprecatedVersion ${JSON.stringify(deprecatedVersion)} is not a major.minor version`);
  const age = (current.major - d.major) * 1000 + (current.minor - d.minor);
  if (age < 3) return 'shown';
  return age === 3 ? 'hidden' : 'removed';
}

/** The help text as the endpoint prints it. */
export function helpText(o: MetricOpts): string {
  const d = o.deprecatedVersion ? `(Deprecated from ${parseMinor(o.deprecatedVersion) ? shortVersion(o.deprecatedVersion) : o.deprecatedVersion}) ` : '';
  return `[${o.stability}] ${d}${o.help}`;
}

const shortVersion = (v: string): string => {
  const p = parseMinor(v)!;
  return `${p.major}.${p.minor}`;
};

/** A labelled metric's children by label values (one Map lookup per use). */
class Children<C> {
  private readonly byKey = new Map<string, C>();
  constructor(private readonly make: (values: string[]) => C) {}

  get(values: string[]): C {
    const key = values.length === 1 ? values[0]! : values.join('\u0000');
    let c = this.byKey.get(key);
    if (!c) this.byKey.set(key, (c = this.make(values)));
    return c;
  }

  all(): IterableIterator<C> {
    return this.byKey.values();
  }

  clear(): void {
    this.byKey.clear();
  }
}

export interface CounterChild {
  inc(n?: number): void;
}
export interface GaugeChild {
  set(v: number): void;
  inc(n?: number): void;
  dec(n?: number): void;
}
export interface HistogramChild {
  observe(v: number): void;
}

/**
 * A counter child counts in a plain number; the count reaches prom-client when the metric is
 * collected (a scrape), so the request path never pays prom-client's per-call label hashing.
 */
class LocalCounterChild implements CounterChild {
  pending = 0;
  private target: { inc(n: number): void } | undefined;
  constructor(
    private readonly prom: Counter<string>,
    private readonly values: readonly string[],
  ) {}
  inc(n = 1): void {
    this.pending += n;
  }
  flush(): void {
    if (this.pending === 0) return;
    (this.target ??= this.prom.labels(...this.values)).inc(this.pending);
    this.pending = 0;
  }
}

export class CounterMetric {
  private readonly children: Children<LocalCounterChild>;
  constructor(readonly prom: Counter<string>) {
    this.children = new Children((v) => new LocalCounterChild(prom, v));
  }
  with(...values: string[]): CounterChild {
    return this.children.get(values);
  }
  inc(n = 1): void {
    this.prom.inc(n);
  }
  /** Hands the children's counts to prom-client (before a scrape reads it). */
  flush(): void {
    for (const c of this.children.all()) c.flush();
  }
}

export class GaugeMetric {
  private readonly children: Children<GaugeChild>;
  constructor(readonly prom: Gauge<string>) {
    this.children = new Children((v) => prom.labels(...v));
  }
  with(...values: string[]): GaugeChild {
    return this.children.get(values);
  }
  set(v: number): void {
    this.prom.set(v);
  }
}

/** One label set of a histogram: cumulative bucket counts are built at scrape time from these. */
class LocalHistogramChild implements HistogramChild {
  readonly perBucket: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.perBucket = new Float64Array(bounds.length);
  }
  observe(v: number): void {
    if (!Number.isFinite(v)) return;
    this.sum += v;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.perBucket[i]!++;
        return;
      }
    }
  }
}

interface SampleValue {
  labels: Record<string, string | number>;
  sharedLabels: Record<string, string>;
  value: number;
  metricName: string;
}

/**
 * A histogram kept in typed arrays and handed to prom-client's registries as a metric of its own (the
 * samples are what prom-client's Histogram produces, so both expositions format it the same way).
 */
/** A family as prom-client's registries take it for the text exposition. */
type PromFamily = { name: string; help: string; type: string; values: SampleValue[]; aggregator: string };
/** The JSON form of a family (registry.getMetricsAsJSON). */
type JsonFamily = { name: string; help: string; type: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[]; aggregator: string };

/** A histogram's samples: cumulative buckets, +Inf, _sum and _count for each label set. */
function histogramFamily(
  m: { name: string; help: string; type: string; aggregator: string },
  bounds: readonly number[],
  children: Iterable<{ perBucket: ArrayLike<number>; labels: Readonly<Record<string, string>>; count: number; sum: number }>,
): PromFamily {
  const values: SampleValue[] = [];
  for (const c of children) {
    let acc = 0;
    for (let i = 0; i < bounds.length; i++) {
      acc += c.perBucket[i]!;
      values.push({ labels: { le: bounds[i]! }, sharedLabels: c.labels, value: acc, metricName: `${m.name}_bucket` });
    }
    values.push({ labels: { le: '+Inf' }, sharedLabels: c.labels, value: c.count, metricName: `${m.name}_bucket` });
    values.push({ labels: {}, sharedLabels: c.labels, value: c.sum, metricName: `${m.name}_sum` });
    values.push({ labels: {}, sharedLabels: c.labels, value: c.count, metricName: `${m.name}_count` });
  }
  return { name: m.name, help: m.help, type: m.type, values, aggregator: m.aggregator };
}

/** Shared labels folded into each sample's labels. */
const jsonFamily = (data: PromFamily): JsonFamily => ({ ...data, values: data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: { ...sharedLabels, ...labels } })) });

export class HistogramMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly children: Children<LocalHistogramChild>;
  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
  ) {
    this.children = new Children((v) => new LocalHistogramChild(bounds, Object.fromEntries(labelNames.map((n, i) => [n, v[i] ?? '']))));
  }
  with(...values: string[]): HistogramChild {
    return this.children.get(values);
  }
  observe(v: number): void {
    this.children.get([]).observe(v);
  }

  /** What prom-client's registries call for the text exposition. */
  getForPromString(): Promise<PromFamily> {
    return Promise.resolve(histogramFamily(this, this.bounds, this.children.all()));
  }

  /** The JSON form (registry.getMetricsAsJSON): shared labels folded into each sample's labels. */
  async get(): Promise<JsonFamily> {
    return jsonFamily(await this.getForPromString());
  }

  reset(): void {
    this.children.clear();
  }
}

export interface TimingHistogramChild {
  /** The gauge's new value: the time until the next set() is counted in its bucket. `at`: now (performance.now()), when known. */
  set(v: number, at?: number): void;
}

/** One label set of a timing histogram: seconds spent in each bucket, and the value held now. */
class LocalTimingHistogramChild implements TimingHistogramChild {
  readonly perBucket: Float64Array;
  /** Integral of value dt (seconds). */
  sum = 0;
  /** Seconds observed. */
  count = 0;
  /** Seconds spent above the last bound (the +Inf bucket alone). */
  overflow = 0;
  private value: number;
  private since: number;
  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
    initial: number,
    private readonly now: () => number,
  ) {
    this.perBucket = new Float64Array(bounds.length);
    this.value = initial;
    this.since = now();
  }
  /** Counts the time since the last change at the value held. */
  settle(t = this.now()): void {
    const dt = (t - this.since) / 1000;
    this.since = t;
    if (dt <= 0 || !Number.isFinite(this.value)) return;
    this.count += dt;
    this.sum += this.value * dt;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (this.value <= b[i]!) {
        this.perBucket[i]! += dt;
        return;
      }
    }
    this.overflow += dt;
  }
  set(v: number, at?: number): void {
    if (v === this.value) return;
    this.settle(at);
    this.value = v;
  }
}

/**
 * upstream's TimingHistogram (component-base): a gauge observed continuously, each bucket counting
 * the seconds the gauge's value lay in it, _sum the integral of the value over time and _count the
 * seconds observed. Exposed as a histogram whose counts are seconds (fractions in the text format).
 */
export class TimingHistogramMetric {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly children: Children<LocalTimingHistogramChild>;
  constructor(
    readonly name: string,
    readonly help: string,
    labelNames: readonly string[],
    private readonly bounds: readonly number[],
    now: () => number = () => performance.now(),
  ) {
    this.children = new Children((v) => new LocalTimingHistogramChild(bounds, Object.fromEntries(labelNames.map((n, i) => [n, v[i] ?? ''])), 0, now));
  }
  with(...values: string[]): TimingHistogramChild {
    return this.children.get(values);
  }

  getForPromString(): Promise<PromFamily> {
    const children = [...this.children.all()];
    for (const c of children) c.settle();
    return Promise.resolve(histogramFamily(this, this.bounds, children));
  }

  async get(): Promise<JsonFamily> {
    return jsonFamily(await this.getForPromString());
  }

  reset(): void {
    this.children.clear();
  }
}

export interface RegistryOptions {
  /** --show-hidden-metrics-for-version was given (and valid): hidden metrics are registered. */
  showHidden?: boolean;
  current?: { major: number; minor: number };
  /** Where registration warnings go (deprecated metrics). */
  warn?: (msg: string) => void;
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

/**
 * A float as the Prometheus text format writes it (expfmt's writeFloat): sample values and the `le`
 * and `quantile` labels. `NaN`, `+Inf`, `-Inf`, else Go's shortest form (`1`, `0.005`, `1e+06`).
 * Prometheus keeps a label's text as it is, so a bound spelled otherwise than upstream spells it
 * (`1000000` for `1e+06`) would be another series, and upstream's dashboards would not find it.
 */
export function textFloat(v: number): string {
  // expfmt writes zero as 0, negative zero too (goFloat spells the infinities and NaN as expfmt does)
  return v === 0 ? '0' : goFloat(v);
}

/**
 * A float as the OpenMetrics encoder writes it (expfmt's writeOpenMetricsFloat): the text format's
 * spelling, with `.0` added when it has neither a point nor an exponent (`1.0`, `1000.0`; `1e+06`
 * stays). Counts (a histogram's buckets and _count) are written as integers instead (openMetricsCount).
 */
export function openMetricsFloat(v: number): string {
  const s = textFloat(v);
  const c = s.charCodeAt(s.length - 1);
  // a text ending in a digit without '.' or 'e' is an integer (NaN and the infinities end in a letter)
  return c >= 48 && c <= 57 && s.indexOf('.') < 0 && s.indexOf('e') < 0 ? `${s}.0` : s;
}

/** A count as the OpenMetrics encoder writes one (expfmt's writeUint: all its digits). */
const openMetricsCount = (v: number): string => (Number.isSafeInteger(v) && v >= 0 ? String(v) : BigInt(Math.max(0, Math.trunc(v))).toString());

/** Labels whose values are numbers written as floats (a histogram's bound, a summary's quantile). */
const FLOAT_LABELS = new Set(['le', 'quantile']);

/** A label value between its quotes: backslash, double quote and newline escaped (both formats). */
const labelValueText = (name: string, v: string | number, openMetrics: boolean): string => {
  if (typeof v === 'number') return FLOAT_LABELS.has(name) ? (openMetrics ? openMetricsFloat(v) : textFloat(v)) : String(v);
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
};

/** HELP text: backslash and newline escaped; OpenMetrics escapes double quotes as well. */
const helpLineText = (help: string, openMetrics: boolean): string => {
  const s = help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
  return openMetrics ? s.replace(/"/g, '\\"') : s;
};

/** One sample as the metrics hand it out (prom-client's shape, also HistogramMetric's). */
export interface ExposedSample {
  metricName?: string;
  labels?: Record<string, string | number>;
  /** The labels of the sample's series (a histogram child's), written before its own (`le`). */
  sharedLabels?: Record<string, string | number>;
  value: number;
  exemplar?: { labelSet: Record<string, string | number>; value: number; timestamp?: number } | null;
}

export interface ExposedFamily {
  name: string;
  help: string;
  type: string;
  values?: ExposedSample[];
}

interface ExposableMetric {
  get(): Promise<ExposedFamily> | ExposedFamily;
  getForPromString?(): Promise<ExposedFamily> | ExposedFamily;
}

function labelsText(labels: Record<string, string | number> | undefined, shared: Record<string, string | number> | undefined, openMetrics: boolean): string {
  let out = '';
  if (shared) for (const k in shared) out += `,${k}="${labelValueText(k, shared[k]!, openMetrics)}"`;
  if (labels) for (const k in labels) if (!shared || !Object.hasOwn(shared, k)) out += `,${k}="${labelValueText(k, labels[k]!, openMetrics)}"`;
  return out ? `{${out.slice(1)}}` : '';
}

/**
 * One family in either format, as upstream's encoders (prometheus/common expfmt) write it. The text
 * format writes every value as a float (writeFloat: `3`, `1e+06`). OpenMetrics writes floats with a
 * point or exponent (`3.0`), and a histogram's bucket counts and _count (a summary's _count) as
 * integers; it names a counter's family without `_total` and its samples with it, and a counter
 * declared without `_total` keeps its name and is of type `unknown` (OpenMetrics requires the
 * suffix of a counter). A histogram's series labels come before its `le`, as upstream writes them.
 */
export function familyText(f: ExposedFamily, openMetrics: boolean, others: ReadonlySet<string> = new Set()): string {
  let type = f.type;
  let family = f.name;
  if (openMetrics && type === 'counter') {
    // a counter whose family name would be another family's (aggregator_unavailable_apiservice_total
    // beside the gauge aggregator_unavailable_apiservice) stays whole, of type unknown
    if (family.endsWith('_total') && !others.has(family.slice(0, -6))) family = family.slice(0, -6);
    else type = 'unknown';
  }
  const lines = [`# HELP ${family} ${helpLineText(f.help, openMetrics)}`, `# TYPE ${family} ${type}`];
  const counted = openMetrics && (type === 'histogram' || type === 'summary');
  for (const v of f.values ?? []) {
    const name = v.metricName ?? f.name;
    let value: string;
    if (!openMetrics) value = textFloat(v.value);
    else if (counted && (name.endsWith('_count') || (type === 'histogram' && name.endsWith('_bucket')))) value = openMetricsCount(v.value);
    else value = openMetricsFloat(v.value);
    let line = `${name}${labelsText(v.labels, v.sharedLabels, openMetrics)} ${value}`;
    if (openMetrics && v.exemplar) line += ` # ${labelsText(v.exemplar.labelSet, undefined, true) || '{}'} ${openMetricsFloat(v.exemplar.value)}${v.exemplar.timestamp === undefined ? '' : ` ${openMetricsFloat(v.exemplar.timestamp)}`}`;
    lines.push(line);
  }
  return lines.join('\n');
}

/** A whole exposition of these families: blank lines between them in the text format, `# EOF` last in OpenMetrics. */
export function expositionText(families: readonly ExposedFamily[], openMetrics: boolean): string {
  const names = new Set(families.map((f) => f.name));
  const texts = families.map((f) => familyText(f, openMetrics, names));
  return openMetrics ? `${texts.join('\n')}\n# EOF\n` : `${texts.join('\n\n')}\n`;
}

/**
 * A prom-client registry whose exposition is written by familyText: prom-client's metrics, collectors
 * and collectDefaultMetrics work with it unchanged, only the text differs (valid value spellings, no
 * renamed metrics).
 */
export class ExpositionRegistry extends Registry<RegistryContentType> {
  constructor(openMetrics: boolean) {
    super();
    if (openMetrics) this.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
  }

  get isOpenMetrics(): boolean {
    return this.contentType === Registry.OPENMETRICS_CONTENT_TYPE;
  }

  override setDefaultLabels(): void {
    throw new Error('default labels are not written by ExpositionRegistry');
  }

  override async metrics(): Promise<string> {
    const families = await Promise.all(this.getMetricsAsArray().map((m) => this.familyOf(m as unknown as ExposableMetric)));
    return expositionText(families, this.isOpenMetrics);
  }

  override async getSingleMetricAsString(name: string): Promise<string> {
    const m = this.getSingleMetric(name);
    if (!m) throw new Error(`no metric named ${name}`);
    return familyText(await this.familyOf(m as unknown as ExposableMetric), this.isOpenMetrics);
  }

  private async familyOf(m: ExposableMetric): Promise<ExposedFamily> {
    return typeof m.getForPromString === 'function' ? m.getForPromString() : m.get();
  }
}

/** The metrics of one server: what /metrics prints. */
export class StabilityRegistry {
  readonly text = new ExpositionRegistry(false);
  readonly openMetrics = new ExpositionRegistry(true);
  /** Metrics the policy keeps off the endpoint, by name. */
  readonly hidden = new Set<string>();

  constructor(private readonly o: RegistryOptions = {}) {}

  /** The registries a metric goes into (none when hidden); warns for deprecated ones. */
  private registersFor(o: MetricOpts): Registry[] {
    const v = visibilityOf(o.deprecatedVersion, this.o.current ?? CURRENT_MINOR);
    if (o.deprecatedVersion) (this.o.warn ?? console.warn)(`metric ${o.name} is deprecated since ${o.deprecatedVersion}${v === 'shown' ? '' : ' and hidden'}`);
    if (v === 'removed' || (v === 'hidden' && !this.o.showHidden)) {
      this.hidden.add(o.name);
      return [];
    }
    return [this.text, this.openMetrics] as unknown as Registry[];
  }

  /** `collect`: for counts kept elsewhere, set at scrape time (the counter is reset, then raised to the count). */
  counter(o: CounterOpts & { collect?: (c: CounterMetric) => void }): CounterMetric {
    const collect = o.collect;
    let self: CounterMetric;
    const c = new Counter({
      name: o.name,
      help: helpText(o),
      labelNames: o.labelNames ?? [],
      registers: this.registersFor(o),
      aggregator: o.aggregator ?? 'sum',
      collect: collect
        ? () => {
            self.prom.reset();
            collect(self);
            self.flush();
          }
        : () => self.flush(),
    });
    self = new CounterMetric(c);
    return self;
  }

  gauge(o: GaugeOpts & { collect?: (g: GaugeMetric) => void | Promise<void> }): GaugeMetric {
    const collect = o.collect;
    let self: GaugeMetric;
    const g = new Gauge({
      name: o.name,
      help: helpText(o),
      labelNames: o.labelNames ?? [],
      registers: this.registersFor(o),
      aggregator: o.aggregator,
      ...(collect ? { collect: () => collect(self) } : {}),
    });
    self = new GaugeMetric(g);
    return self;
  }

  histogram(o: HistogramOpts): HistogramMetric {
    const h = new HistogramMetric(o.name, helpText(o), o.labelNames ?? [], [...o.buckets].sort((a, b) => a - b));
    for (const r of this.registersFor(o)) r.registerMetric(h as unknown as Metric);
    return h;
  }

  timingHistogram(o: HistogramOpts): TimingHistogramMetric {
    const h = new TimingHistogramMetric(o.name, helpText(o), o.labelNames ?? [], [...o.buckets].sort((a, b) => a - b));
    for (const r of this.registersFor(o)) r.registerMetric(h as unknown as Metric);
    return h;
  }

  /** The exposition: OpenMetrics when asked for, the Prometheus text format otherwise. */
  async expose(openMetrics: boolean): Promise<{ contentType: string; body: string }> {
    if (openMetrics) return { contentType: OPENMETRICS_CONTENT_TYPE, body: await this.openMetrics.metrics() };
    return { contentType: PROMETHEUS_CONTENT_TYPE, body: await this.text.metrics() };
  }
}

/** Whether an Accept header asks for OpenMetrics (as Prometheus sends it, first or with the higher q). */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (!accept) return false;
  let best = '';
  let bestQ = -1;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().split(';');
    const q = Number(params.map((p) => p.trim()).find((p) => p.startsWith('q='))?.slice(2) ?? '1');
    if (q > bestQ) {
      bestQ = q;
      best = type.trim().toLowerCase();
    }
  }
  return best === 'application/openmetrics-text';
}

/** Buckets as upstream's prometheus.ExponentialBuckets(start, factor, count). */
export function exponentialBuckets(start: number, factor: number, count: number): number[] {
  const out: number[] = [];
  for (let i = 0, v = start; i < count; i++, v *= factor) out.push(v);
  return out;
}
