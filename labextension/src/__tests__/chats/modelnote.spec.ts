import { modelArg, modelLine } from '../../chats/modelnote';

const TIERS = {
  codegen: { provider: 'anthropic', model: 'claude-sonnet-4-5' },
  classify: { provider: 'anthropic', model: 'claude-haiku-4-5' }
};

describe('/model', () => {
  it('shows with no argument, sets with one, goes back with default', () => {
    expect(modelArg('')).toEqual({ kind: 'show' });
    expect(modelArg('   ')).toEqual({ kind: 'show' });
    expect(modelArg(' classify ')).toEqual({ kind: 'set', model: 'classify' });
    expect(modelArg('llama3.1:8b')).toEqual({ kind: 'set', model: 'llama3.1:8b' });
    for (const word of ['default', 'Default', 'reset', 'none']) {
      expect(modelArg(word)).toEqual({ kind: 'set', model: null });
    }
  });

  it('names the agent’s codegen tier when the chat has no model of its own', () => {
    const line = modelLine({ model: null }, 'agent', TIERS, false);
    expect(line).toContain('claude-sonnet-4-5 (anthropic, the codegen tier of the agent agent)');
    expect(line).toContain('/model NAME');
  });

  it('names the chat’s own tier or model, and the way back', () => {
    expect(modelLine({ model: 'classify' }, 'agent', TIERS, false)).toBe(
      'This chat answers with claude-haiku-4-5 (anthropic, the classify tier), its own choice. /model default goes back to claude-sonnet-4-5, the agent’s.'
    );
    expect(modelLine({ model: 'claude-opus-4-1' }, 'agent', TIERS, false)).toContain(
      'answers with claude-opus-4-1, its own choice'
    );
  });

  it('says the demo model answers, and when nothing is configured', () => {
    expect(modelLine({ model: 'x' }, 'agent', TIERS, true)).toContain('demo model');
    expect(modelLine({}, 'agent', {}, false)).toContain('No codegen tier');
  });
});
