/**
 * What the settings dialog offers for a tier, from `GET agent/settings` (pure logic):
 * only the admin's key references, and for a chosen key only the base URLs it is bound
 * to (`key_bindings`); a keyless tier may use the allowed URLs and, when the admin allows
 * it, a loopback URL it types. The server checks the same rules on `PUT agent/settings`.
 */
import type {
  IAgentSettings,
  IModelProfile,
  IProfileFields,
  ITierReadiness,
  ITierStatus
} from '../api/types';

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

/** The base URL a provider uses when a tier names none (the official SDKs'). */
export const DEFAULT_BASE_URLS: { [provider: string]: string } = {
  anthropic: 'https://api.anthropic.com',
  openai: 'https://api.openai.com/v1'
};

/** The URL a tier's requests go to: its base URL, else its provider's default. */
export function effectiveUrl(tier: { provider: string; base_url?: string }): string {
  return normaliseUrl(tier.base_url || DEFAULT_BASE_URLS[tier.provider] || '');
}

/**
 * The URL to select for a keyed tier among the URLs its key is bound to: `current` when
 * bound; a configured URL that is not bound stays shown as it is until the key changes
 * (so an unchanged tier is not sent back); otherwise the provider's default when bound,
 * else the first bound URL.
 */
export function boundUrl(urls: string[], current: string, keyChanged: boolean, provider: string): string {
  if (urls.includes(normaliseUrl(current))) {
    return normaliseUrl(current);
  }
  if (current && !keyChanged) {
    return current;
  }
  const preferred = DEFAULT_BASE_URLS[provider];
  return preferred && urls.includes(preferred) ? preferred : (urls[0] ?? '');
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

/**
 * The readiness line of a tier: "Ready · key set on the server", "Not ready: why"; a tier
 * with no provider chosen (`provider` empty: `classify` and `vision` then use the codegen
 * tier) says so rather than the codegen tier's reason.
 */
export function readinessText(
  readiness: ITierReadiness | undefined,
  ref: string | null,
  provider = 'set'
): string {
  if (!readiness) {
    return '';
  }
  if (!provider) {
    return 'Not set: the codegen tier answers for it';
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

/**
 * The tiers that cannot run, one clause per reason (several tiers failing for one
 * missing key name it once): `codegen, classify and vision (anthropic claude-sonnet-4-5):
 * env:ANTHROPIC_API_KEY is not set on the server`; empty when every tier is ready.
 */
export function unreadySummary(tiers: { [name: string]: ITierStatus }): string {
  const byReason = new Map<string, string[]>();
  for (const [name, t] of Object.entries(tiers)) {
    if (t.ready) {
      continue;
    }
    const key = `${t.provider} ${t.model}\u0000${t.reason || 'unknown reason'}`;
    byReason.set(key, [...(byReason.get(key) ?? []), name]);
  }
  const clauses: string[] = [];
  for (const [key, names] of byReason) {
    const [what, reason] = key.split('\u0000');
    const listed =
      names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
    clauses.push(`${listed} (${what}): ${reason}`);
  }
  return clauses.join('; ');
}

/** The line saying what runs assume of a tier's model: "32k context · 4k output · native tools". */
export function profileText(profile: IModelProfile | undefined): string {
  if (!profile) {
    return '';
  }
  const k = (n: number): string => (n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n));
  const line = `${k(profile.context_window)} context · ${k(profile.max_output)} output · ${profile.tool_mode} tools`;
  return profile.assumed
    ? `Assumed (the model is not known): ${line}. Set its window and tool mode below.`
    : `Profile: ${line}`;
}

/**
 * The profile fields from the form's raw values, or undefined when none is set. Blank is
 * not set; text that is not a whole number is sent as typed, so the server's refusal
 * names the field (never silently dropped).
 */
export function profileFields(raw: {
  context_window: string;
  max_output: string;
  tool_mode: string;
}): IProfileFields | undefined {
  const out: IProfileFields = {};
  const num = (text: string): number | undefined => {
    const typed = text.trim();
    if (!typed) {
      return undefined;
    }
    return Number.isInteger(Number(typed)) ? Number(typed) : (typed as unknown as number);
  };
  const window = num(raw.context_window);
  const output = num(raw.max_output);
  if (window !== undefined) {
    out.context_window = window;
  }
  if (output !== undefined) {
    out.max_output = output;
  }
  if (raw.tool_mode === 'native' || raw.tool_mode === 'fenced' || raw.tool_mode === 'xml') {
    out.tool_mode = raw.tool_mode;
  }
  return Object.keys(out).length ? out : undefined;
}
