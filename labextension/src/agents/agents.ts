/**
 * The agents a server hosts, as the panel shows them (pure logic: no `@jupyterlab/*` or
 * DOM import, so jest tests it with ts-jest alone).
 *
 * - `GET agent/agents` lists them, the default one (`agent`) first (`IAgentInfo`);
 * - the new-chat action asks which agent only when the server hosts more than one
 *   (`AgentChoice.needsPick`), preselecting the last pick while the server still hosts it,
 *   else the default agent, and remembers the pick (`IPickStore`: the browser's storage);
 * - the chat list names a chat's agent when it is not the default (`chatAgentLabel`);
 * - each turn's footer names the agent that answered, its record's `fromAgent`
 *   (`answeredBy`; records written before agents say nothing: the default agent).
 */
import type { ITurnRecord } from '../runs/turns';

/** The agent every server hosts (chats made before agents existed belong to it). */
export const DEFAULT_AGENT = 'agent';

/** One agent of `GET agent/agents` (`runtime/agents.py` `agent_json`). */
export interface IAgentInfo {
  name: string;
  description: string;
  /** The identity fingerprint its turns carry (`llm.fingerprints.identity`). */
  soul_fingerprint: string;
  /** The tiers it runs with (no URL, no key reference). */
  tiers: { [tier: string]: { provider: string; model: string } };
  default: boolean;
}

/** Where the last pick is kept (the browser's `localStorage` in the panel). */
export interface IPickStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** The storage key of the last agent picked for a new chat. */
export const LAST_PICK_KEY = 'jupyter-agent:last-agent';

/** The agent a chat belongs to (records and servers before agents: the default one). */
export function chatAgent(chat: { agent?: string | null }): string {
  return chat.agent || DEFAULT_AGENT;
}

/** What the chat list shows of a chat's agent: its name when not the default, else null. */
export function chatAgentLabel(chat: { agent?: string | null }): string | null {
  const name = chatAgent(chat);
  return name === DEFAULT_AGENT ? null : name;
}

/** The agent that answered a turn (its record's `fromAgent`). */
export function answeredBy(turn: Pick<ITurnRecord, 'fromAgent'>): string {
  return turn.fromAgent || DEFAULT_AGENT;
}

/** The line of an agent in the picker: `reviewer — Reviews code`. */
export function agentLabel(agent: IAgentInfo): string {
  const description = (agent.description || '').trim();
  return description ? `${agent.name} — ${description}` : agent.name;
}

/** The choice of an agent for a new chat (see the module comment). */
export class AgentChoice {
  /**
   * @param agents - `GET agent/agents`'s list (any order; shown default first, then by name).
   * @param store - where the last pick is remembered (null: nowhere).
   */
  constructor(
    agents: IAgentInfo[],
    private readonly store: IPickStore | null = null
  ) {
    const named = agents.filter(a => a && typeof a.name === 'string' && a.name);
    const first = named.filter(a => a.default || a.name === DEFAULT_AGENT).slice(0, 1);
    const rest = named
      .filter(a => !first.includes(a))
      .sort((a, b) => a.name.localeCompare(b.name));
    this.agents = [...first, ...rest];
  }

  /** The agents, the default one first. */
  readonly agents: IAgentInfo[];

  /** True when the server hosts more than one agent: the person picks one. */
  get needsPick(): boolean {
    return this.agents.length > 1;
  }

  /** The default agent's name (the server's `default: true`, else `agent`). */
  get defaultName(): string {
    return this.agents.find(a => a.default)?.name ?? DEFAULT_AGENT;
  }

  /** The agent to preselect: the last pick while still hosted, else the default one. */
  get preselected(): string {
    let last: string | null = null;
    try {
      last = this.store?.getItem(LAST_PICK_KEY) ?? null;
    } catch {
      last = null; // storage refused (private mode): nothing remembered
    }
    return last && this.agents.some(a => a.name === last) ? last : this.defaultName;
  }

  /** The picker's lines, in `agents` order. */
  get labels(): string[] {
    return this.agents.map(agentLabel);
  }

  /** The agent of a picker line (null for a line that is not one). */
  fromLabel(label: string): string | null {
    return this.agents.find(a => agentLabel(a) === label)?.name ?? null;
  }

  /** Remember `name` as the last pick (for the next new chat). */
  remember(name: string): void {
    try {
      this.store?.setItem(LAST_PICK_KEY, name);
    } catch {
      // storage refused: the default is preselected next time
    }
  }
}
