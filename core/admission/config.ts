/**
 * --admission-control-config-file: an AdmissionConfiguration (apiserver.config.svc.io/v1, or upstream's
 * apiserver.config.k8s.io spelling, v1alpha1 and v1 alike) naming per-plugin configuration, inline
 * (`configuration`) or in a file of its own (`path`, relative to this file). A plugin reads its own
 * part (`configurationOf(name)`); a name no plugin knows is an error at start, as upstream refuses it.
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { StartError } from '../api/start-error.js';
import { decodeYaml } from '../codec/yaml.js';
import { ALL_ORDERED_PLUGINS } from './plugins.js';

const CONFIG_GROUPS = ['apiserver.config.svc.io', 'apiserver.config.k8s.io', 'apiserver.k8s.io'];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function readYaml(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new StartError(`unable to read ${what} ${JSON.stringify(file)}: ${(e as Error).message}`);
  }
  try {
    return decodeYaml(text).value;
  } catch (e) {
    throw new StartError(`unable to decode ${what} ${JSON.stringify(file)}: ${(e as Error).message}`);
  }
}

export interface AdmissionConfiguration {
  /** The file it was read from ('' when none was given). */
  file: string;
  /** A plugin's configuration object (already read from its own file when `path` named one). */
  configurationOf(plugin: string): Obj | undefined;
}

export const EMPTY_ADMISSION_CONFIGURATION: AdmissionConfiguration = { file: '', configurationOf: () => undefined };

export function readAdmissionConfiguration(file: string): AdmissionConfiguration {
  if (!file) return EMPTY_ADMISSION_CONFIGURATION;
  const doc = readYaml(file, 'admission control configuration file');
  const bad = (why: string): StartError => new StartError(`admission control configuration file ${JSON.stringify(file)}: ${why}`);
  if (!isObj(doc)) throw bad('not an AdmissionConfiguration');
  const av = typeof doc.apiVersion === 'string' ? doc.apiVersion : '';
  if (doc.kind !== 'AdmissionConfiguration' || !CONFIG_GROUPS.some((g) => av.startsWith(`${g}/`))) {
    throw bad(`want kind AdmissionConfiguration of apiserver.config.svc.io/v1, got ${JSON.stringify(doc.kind ?? '')} of ${JSON.stringify(av)}`);
  }
  const known = new Set(ALL_ORDERED_PLUGINS.map((p) => p.name));
  const byName = new Map<string, Obj>();
  const base = dirname(resolve(file));
  for (const [i, p] of (Array.isArray(doc.plugins) ? doc.plugins : []).entries()) {
    if (!isObj(p) || typeof p.name !== 'string' || !p.name) throw bad(`plugins[${i}]: name is required`);
    if (!known.has(p.name)) throw bad(`plugins[${i}]: plugin "${p.name}" is unknown`);
    if (byName.has(p.name)) throw bad(`plugins[${i}]: plugin "${p.name}" is configured twice`);
    let cfg: unknown = p.configuration;
    if (cfg === undefined && typeof p.path === 'string' && p.path) {
      const path = isAbsolute(p.path) ? p.path : resolve(base, p.path);
      cfg = readYaml(path, `configuration of admission plugin ${p.name}`);
    }
    if (cfg === undefined) continue;
    if (!isObj(cfg)) throw bad(`plugins[${i}]: the configuration of ${p.name} must be an object`);
    // a path inside a plugin's configuration is relative to the file that holds it
    byName.set(p.name, { ...cfg, __base: typeof p.path === 'string' && p.path ? dirname(isAbsolute(p.path) ? p.path : resolve(base, p.path)) : base });
  }
  return { file, configurationOf: (name) => byName.get(name) };
}

/** A path from a plugin's configuration, resolved against the file that held it. */
export function configPath(cfg: Obj, path: string): string {
  const base = typeof cfg.__base === 'string' ? cfg.__base : process.cwd();
  return isAbsolute(path) ? path : resolve(base, path);
}
