import {
  AgentChoice,
  agentLabel,
  answeredBy,
  chatAgent,
  chatAgentLabel,
  DEFAULT_AGENT,
  IAgentInfo,
  IPickStore,
  LAST_PICK_KEY
} from '../../agents/agents';

function agent(name: string, extra: Partial<IAgentInfo> = {}): IAgentInfo {
  return {
    name,
    description: '',
    soul_fingerprint: `fp-${name}`,
    tiers: { codegen: { provider: 'fake', model: 'm' } },
    default: name === DEFAULT_AGENT,
    ...extra
  };
}

class MemoryStore implements IPickStore {
  readonly values = new Map<string, string>();
  getItem(key: string): string | null {
    return this.values.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.values.set(key, value);
  }
}

describe('agent choice', () => {
  it('asks only when the server hosts more than one agent', () => {
    expect(new AgentChoice([agent('agent')]).needsPick).toBe(false);
    expect(new AgentChoice([]).needsPick).toBe(false);
    expect(new AgentChoice([agent('agent'), agent('reviewer')]).needsPick).toBe(true);
  });

  it('lists the default agent first, then by name', () => {
    const choice = new AgentChoice([agent('zeta'), agent('reviewer'), agent('agent')]);
    expect(choice.agents.map(a => a.name)).toEqual(['agent', 'reviewer', 'zeta']);
    expect(choice.defaultName).toBe('agent');
  });

  it('preselects the default agent, then the last pick while it is hosted', () => {
    const store = new MemoryStore();
    const agents = [agent('agent'), agent('reviewer', { description: 'Reviews code' })];
    const first = new AgentChoice(agents, store);
    expect(first.preselected).toBe('agent');
    first.remember('reviewer');
    expect(store.values.get(LAST_PICK_KEY)).toBe('reviewer');
    expect(new AgentChoice(agents, store).preselected).toBe('reviewer');
    // The remembered agent was removed from the server: the default again.
    expect(new AgentChoice([agent('agent'), agent('critic')], store).preselected).toBe('agent');
  });

  it('maps picker lines back to agents', () => {
    const choice = new AgentChoice([agent('agent'), agent('reviewer', { description: ' Reviews ' })]);
    expect(choice.labels).toEqual(['agent', 'reviewer — Reviews']);
    expect(choice.fromLabel('reviewer — Reviews')).toBe('reviewer');
    expect(choice.fromLabel('nobody')).toBeNull();
    expect(agentLabel(agent('x'))).toBe('x');
  });

  it('survives a storage that refuses', () => {
    const refusing: IPickStore = {
      getItem: () => {
        throw new Error('denied');
      },
      setItem: () => {
        throw new Error('denied');
      }
    };
    const choice = new AgentChoice([agent('agent'), agent('reviewer')], refusing);
    expect(choice.preselected).toBe('agent');
    expect(() => choice.remember('reviewer')).not.toThrow();
  });
});

describe('agent labels', () => {
  it('names a chat agent only when it is not the default', () => {
    expect(chatAgentLabel({ agent: 'reviewer' })).toBe('reviewer');
    expect(chatAgentLabel({ agent: 'agent' })).toBeNull();
    expect(chatAgentLabel({})).toBeNull();
    expect(chatAgent({})).toBe('agent');
  });

  it('names the agent that answered a turn', () => {
    expect(answeredBy({ fromAgent: 'reviewer' })).toBe('reviewer');
    expect(answeredBy({})).toBe('agent');
  });
});
