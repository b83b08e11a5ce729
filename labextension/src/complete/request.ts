/**
 * Inline completion's pure parts (jest tests them alone): what to ask `POST
 * agent/complete` from the editor's text and cursor, whether to ask at all, and what the
 * NDJSON answer says to insert.
 */

/** The body of `POST agent/complete`. */
export interface ICompleteBody {
  path: string;
  cell_id?: string;
  prefix: string;
  suffix: string;
  language: string;
}

/** The text before and after the cursor (the server caps each at 20,000 characters). */
export function splitAt(text: string, offset: number, cap = 20_000): { prefix: string; suffix: string } {
  const at = Math.max(0, Math.min(offset, text.length));
  return { prefix: text.slice(Math.max(0, at - cap), at), suffix: text.slice(at, at + cap) };
}

/**
 * Whether to ask: an explicit request always; while typing, only with at least
 * `minPrefix` characters on the cursor's line (not blank) and the cursor at a line's end or
 * before a closing character.
 */
export function shouldAsk(prefix: string, suffix: string, minPrefix: number, explicit: boolean): boolean {
  if (explicit) {
    return true;
  }
  const line = prefix.slice(prefix.lastIndexOf('\n') + 1);
  if (line.trim().length < minPrefix) {
    return false;
  }
  const rest = suffix.slice(0, suffix.indexOf('\n') === -1 ? suffix.length : suffix.indexOf('\n'));
  return /^[\s)\]}'",:]*$/.test(rest);
}

/** The text to insert from the NDJSON answer (its last line), or null when there is none. */
export function answerText(ndjson: string): string | null {
  const lines = ndjson.split('\n').filter(line => line.trim());
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      const value = JSON.parse(lines[i]);
      if (value && typeof value.text === 'string') {
        return value.text.length ? value.text : null;
      }
    } catch {
      return null;
    }
  }
  return null;
}
