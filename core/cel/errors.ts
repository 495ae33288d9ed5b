/** The one error for an expression that does not compile, and cel-go's rendering of an issue. */

/** A compile failure; the message is upstream's wording (`compilation failed: ERROR: <input>:1:8: ...`). */
export class CelCompileError extends Error {
  override name = 'CelCompileError';

  /** The message (what the structured authentication configuration's callers call it). */
  get detail(): string {
    return this.message;
  }
}

/** cel-go's issue text: position, message, the source line and a caret under the column. */
export function issue(source: string, offset: number, message: string): string {
  const before = source.slice(0, Math.max(0, offset));
  const line = before.split('\n').length;
  const col = offset - (before.lastIndexOf('\n') + 1);
  const text = source.split('\n')[line - 1] ?? '';
  return `ERROR: <input>:${line}:${col + 1}: ${message}\n | ${text}\n | ${'.'.repeat(col)}^`;
}
