/**
 * Query parameter values read as upstream reads them, one rule for authorization (request info) and
 * serving (list, write and delete options) alike.
 */

/**
 * Upstream's reading of a boolean query parameter (its parameter codec): absent is false, `0` and
 * `false` in any case are false, every other value (`f`, `no`, the empty string) is true.
 */
export function queryBool(v: string | null | undefined): boolean {
  if (v === null || v === undefined) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** Go's strconv.ParseBool, which upstream applies to `pretty`; undefined where it reports an error. */
export function parseGoBool(v: string): boolean | undefined {
  switch (v) {
    case '1': case 't': case 'T': case 'true': case 'TRUE': case 'True':
      return true;
    case '0': case 'f': case 'F': case 'false': case 'FALSE': case 'False':
      return false;
    default:
      return undefined;
  }
}
