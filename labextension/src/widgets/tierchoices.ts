/**
 * What the settings dialog offers for a tier, from `GET agent/settings` (pure logic):
 * only the admin's key references, and for a chosen key only the base URLs it is bound
 * to (`key_bindings`); a keyless tier may use the allowed URLs and, when the admin allows
 * it, a loopback URL it types. The server checks the same rules on `PUT agent/settings`.
 */
import type { IAgentSettings, ITierReadiness } from '../api';

// The same rule as the server's (runtime/keypolicy.py): a literal loopback host, an
// optional port and path, nothing else.
const LOOPBACK =
  /^https?:\/\/(?:localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d{1,5})?(?:\/[A-Za-z0-9._~\-/%]*)?$/i;

/** `url` without surrounding blanks and trailing slashes (how base URLs compare). */
export function normaliseUrl(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

/** True for `http://127.0.0.1:PORT/...`, `http://localhost:PORT/...`, `http://[::1]:PORT/...`. */
export function isLoopbackUrl(url: string): boolean {
  return LOOPBACK.test(normaliseUrl(url));
}

/** The key references the person may choose. */
export function keyChoices(settings: IAgentSettings): string[] {
  return [...(settings.allowed_key_refs ?? Object.keys(settings.key_bindings ?? {}))];
}

/**
 * The base URLs a tier with key reference `ref` may use ('' or null: a keyless tier).
 * A server without `key_bindings` (older) offers its `allowed_base_urls` for every key.
 */
export function urlChoices(settings: IAgentSettings, ref: string | null): string[] {
  const bindings = settings.key_bindings;
  if (ref && bindings) {
    return [...(bindings[ref] ?? [])];
  }
  return [...(settings.allowed_base_urls ?? [])];
}

/** True when a tier with this key reference may type a loopback URL of its own. */
export function mayTypeLoopback(settings: IAgentSettings, ref: string | null): boolean {
  return !ref && settings.allow_loopback_base_urls === true;
}

/** The readiness line of a tier: "Ready · key set on the server", "Not ready: why". */
export function readinessText(readiness: ITierReadiness | undefined, ref: string | null): string {
  if (!readiness) {
    return '';
  }
  const key = ref
    ? readiness.key_set
      ? `${ref} is set on the server`
      : `${ref} is not set on the server`
    : 'no key needed';
  if (readiness.ready) {
    return `Ready · ${key}`;
  }
  return `Not ready: ${readiness.reason || 'unknown reason'}`;
}
