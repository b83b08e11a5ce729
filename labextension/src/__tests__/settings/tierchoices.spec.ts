import type { IAgentSettings } from '../../api/types';
import {
  boundUrl,
  effectiveUrl,
  isLoopbackUrl,
  keyChoices,
  mayTypeLoopback,
  profileFields,
  profileText,
  readinessText,
  unreadySummary,
  urlChoices
} from '../../settings/tierchoices';

const SETTINGS: IAgentSettings = {
  tiers: {},
  allowed_key_refs: ['env:ANTHROPIC_API_KEY', 'env:OPENAI_API_KEY'],
  allowed_base_urls: ['https://api.anthropic.com', 'https://api.openai.com/v1'],
  key_bindings: {
    'env:ANTHROPIC_API_KEY': ['https://api.anthropic.com'],
    'env:OPENAI_API_KEY': ['https://api.openai.com/v1']
  },
  allow_loopback_base_urls: true
};

describe('tier choices', () => {
  it('offers only the allowed key references', () => {
    expect(keyChoices(SETTINGS)).toEqual(['env:ANTHROPIC_API_KEY', 'env:OPENAI_API_KEY']);
    expect(keyChoices({ tiers: {}, key_bindings: { 'env:A': [] } })).toEqual(['env:A']);
  });

  it('offers a key only the URLs it is bound to', () => {
    expect(urlChoices(SETTINGS, 'env:OPENAI_API_KEY')).toEqual(['https://api.openai.com/v1']);
    expect(urlChoices(SETTINGS, 'env:UNKNOWN')).toEqual([]);
    expect(urlChoices(SETTINGS, null)).toEqual(SETTINGS.allowed_base_urls);
    // An older server without bindings: its allowed URLs.
    const old = { tiers: {}, allowed_base_urls: ['https://x.example'] };
    expect(urlChoices(old, 'env:A')).toEqual(['https://x.example']);
  });

  it('selects a bound URL for a keyed tier', () => {
    const urls = ['https://a.example', 'https://api.openai.com/v1'];
    expect(boundUrl(urls, 'https://a.example/', false, 'openai')).toBe('https://a.example');
    expect(boundUrl(urls, '', false, 'openai')).toBe('https://api.openai.com/v1');
    expect(boundUrl(urls, '', false, 'openai-compatible')).toBe('https://a.example');
    // The admin's unbound URL stays as configured until the key changes.
    expect(boundUrl(urls, 'https://admin.example', false, 'openai')).toBe('https://admin.example');
    expect(boundUrl(urls, 'https://admin.example', true, 'openai')).toBe('https://api.openai.com/v1');
    expect(boundUrl([], '', true, 'openai')).toBe('');
    expect(effectiveUrl({ provider: 'anthropic' })).toBe('https://api.anthropic.com');
    expect(effectiveUrl({ provider: 'openai', base_url: 'https://x/v1/' })).toBe('https://x/v1');
    expect(effectiveUrl({ provider: 'fake' })).toBe('');
  });

  it('lets only a keyless tier type a loopback URL, when allowed', () => {
    expect(mayTypeLoopback(SETTINGS, null)).toBe(true);
    expect(mayTypeLoopback(SETTINGS, 'env:OPENAI_API_KEY')).toBe(false);
    expect(mayTypeLoopback({ ...SETTINGS, allow_loopback_base_urls: false }, null)).toBe(false);
  });

  it('recognises loopback URLs as the server does', () => {
    for (const url of ['http://127.0.0.1:8000/v1', 'http://localhost:11434/v1/', 'http://[::1]:1/v1']) {
      expect(isLoopbackUrl(url)).toBe(true);
    }
    for (const url of ['http://127.0.0.1@evil.example/v1', 'http://localhost.evil.example', 'http://10.0.0.1/v1']) {
      expect(isLoopbackUrl(url)).toBe(false);
    }
  });

  it('says whether a tier is ready and why not', () => {
    expect(readinessText({ ready: true, key_set: true, reason: null }, 'env:A')).toBe(
      'Ready · env:A is set on the server'
    );
    expect(readinessText({ ready: true, key_set: false, reason: null }, null)).toBe(
      'Ready · no key needed'
    );
    expect(
      readinessText(
        { ready: false, key_set: false, reason: 'env:OPENAI_API_KEY is not set on the server' },
        'env:OPENAI_API_KEY'
      )
    ).toBe('Not ready: env:OPENAI_API_KEY is not set on the server');
    expect(readinessText(undefined, null)).toBe('');
  });
});

describe('the tiers that cannot run', () => {
  it('names one missing key once, for every tier it stops', () => {
    const reason = 'env:ANTHROPIC_API_KEY is not set on the server';
    const tier = { provider: 'anthropic', model: 'claude-sonnet-4-5', ready: false, key_set: false, reason };
    expect(unreadySummary({ codegen: tier, classify: tier, vision: tier })).toBe(
      `codegen, classify and vision (anthropic claude-sonnet-4-5): ${reason}`
    );
    const other = { ...tier, provider: 'openai', model: 'gpt-4o', reason: 'env:OPENAI_API_KEY is not set on the server' };
    expect(unreadySummary({ codegen: tier, vision: other })).toBe(
      `codegen (anthropic claude-sonnet-4-5): ${reason}; vision (openai gpt-4o): ${other.reason}`
    );
    expect(unreadySummary({ codegen: { ...tier, ready: true } })).toBe('');
  });

  it('says a tier with no provider uses the codegen tier, not its reason', () => {
    const readiness = { ready: false, key_set: false, reason: 'env:ANTHROPIC_API_KEY is not set on the server' };
    expect(readinessText(readiness, null, '')).toBe('Not set: the codegen tier answers for it');
    expect(readinessText(readiness, null, 'anthropic')).toBe(`Not ready: ${readiness.reason}`);
  });
});

describe('the model profile a tier assumes', () => {
  it('says when it is assumed, and what it is', () => {
    const assumed = { context_window: 8192, max_output: 2048, tool_mode: 'fenced' as const, assumed: true };
    expect(profileText(assumed)).toBe(
      'Assumed (the model is not known): 8k context · 2k output · fenced tools. Set its window and tool mode below.'
    );
    expect(profileText({ ...assumed, context_window: 32768, tool_mode: 'native', assumed: false })).toBe(
      'Profile: 32k context · 2k output · native tools'
    );
    expect(profileText(undefined)).toBe('');
  });

  it('sends only the fields the person set', () => {
    expect(profileFields({ context_window: '', max_output: ' ', tool_mode: '' })).toBeUndefined();
    expect(profileFields({ context_window: '32768', max_output: '', tool_mode: 'native' })).toEqual({
      context_window: 32768,
      tool_mode: 'native'
    });
    // Not a number: sent as typed, so the server's refusal names the field.
    expect(profileFields({ context_window: 'lots', max_output: '', tool_mode: 'json' })).toEqual({
      context_window: 'lots'
    });
  });
});
