/**
 * A small typed client of the jupyter-agent REST API (`{base_url}agent/...`).
 *
 * Every request goes through JupyterLab's `ServerConnection`, so the server's token,
 * XSRF cookie and base URL are handled the same way as for every other Jupyter request.
 * Errors from the server come back as `{message, reason}` JSON and are raised as
 * `AgentApiError`.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IAgentInfo } from './agents';
import type { RunStep } from './events';
import type { IMemory, IMemoryApi, IMemoryList, IMemoryQuery } from './memory';
import type { ITurnRecord } from './model';

/** The path segment every route of the server extension lives under. */
export const API_NAMESPACE = 'agent';

/** Whether a tier can run, and why not (never a key value). */
export interface ITierReadiness {
  ready: boolean;
  /** The tier's key reference resolves on the server (false for a keyless tier). */
  key_set?: boolean;
  /** Why the tier is not ready, e.g. "env:OPENAI_API_KEY is not set on the server". */
  reason?: string | null;
}

/** One model tier as `GET agent/status` reports it (never a key value). */
export interface ITierStatus extends ITierReadiness {
  provider: string;
  model: string;
}

/** The answer of `GET agent/status`. */
export interface IAgentStatus {
  version: string;
  tiers: { [name: string]: ITierStatus };
  /** True when no tier can run: the server answers with the demo model. */
  demo: boolean;
}

/** An error answer of the agent API: its HTTP status and its `{message, reason}`. */
export class AgentApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null
  ) {
    super(message);
    this.name = 'AgentApiError';
  }
}

/**
 * The absolute URL of an agent route.
 *
 * @param baseUrl - the server's base URL (`ServerConnection.ISettings.baseUrl`), with or
 *   without a trailing slash.
 * @param path - the route under `agent/`, e.g. `status` or `chats/chat_1`.
 */
export function agentUrl(baseUrl: string, path: string): string {
  return URLExt.join(baseUrl, API_NAMESPACE, path);
}

/**
 * Send a request to an agent route and return its decoded JSON answer.
 *
 * Throws `AgentApiError` for an answer that is not 2xx, and `ServerConnection.NetworkError`
 * when the server cannot be reached.
 */
export async function requestAgent<T>(
  path: string,
  init: RequestInit = {},
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const url = agentUrl(settings.baseUrl, path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  let body: any = null;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!response.ok) {
    const message =
      body && typeof body.message === 'string' ? body.message : response.statusText;
    const reason = body && typeof body.reason === 'string' ? body.reason : null;
    throw new AgentApiError(response.status, message, reason);
  }
  return body as T;
}

/** `GET agent/status`: the server's version, its tiers and whether it runs the demo. */
export function fetchStatus(
  settings?: ServerConnection.ISettings
): Promise<IAgentStatus> {
  return requestAgent<IAgentStatus>('status', { method: 'GET' }, settings);
}

/** One chat as `GET agent/chats` lists it. */
export interface IChatSummary {
  id: string;
  title: string;
  created: string;
  updated: string;
  /** The agent the chat talks to (absent from servers before issue 16: `agent`). */
  agent?: string;
  active_run_id: string | null;
}

/** `GET agent/chats/{id}`: the chat and its turn records, oldest first. */
export interface IChatDetail extends IChatSummary {
  turns: ITurnRecord[];
}

/** What the person had open when sending a message. */
export interface IView {
  path?: string;
  /** The active cell's index. */
  cell?: number;
  /** The active cell's id (its model id: nbformat's cell id). */
  cell_id?: string;
  selection?: string;
}

/** The answer of a proposal's decision or undo. */
export interface IProposalOutcome {
  outcome: 'applied' | 'partly' | 'discarded' | 'conflict' | 'undone';
  [key: string]: any;
}

/** A row of `GET agent/proposals?chat_id=` (see `proposals.ts`, which reads it). */
export interface IProposalRow {
  id?: string;
  proposal_id?: string;
  chat_id: string;
  run_id: string;
  cell_id?: string;
  path: string;
  edits: { [key: string]: any }[] | string;
  status: string;
  applied: string[] | string;
  [key: string]: any;
}

/** `POST agent/chats/{id}/messages` answer. */
export interface ISendResult {
  run_id: string;
  routed: 'run' | 'mailbox';
  /** The message's id: its `run_start` or `steering` event and its step carry it too. */
  message_id?: string | null;
}

/** `GET agent/runs/{run_id}`: a run's turn record and steps (and its effect log). */
export interface IRunDetail {
  run_id: string;
  chat_id: string;
  turn: ITurnRecord | null;
  steps: RunStep[];
  [key: string]: any;
}

/** One tier of the settings (a key reference, never a key value). */
export interface ITierSettings {
  provider: string;
  model: string;
  base_url?: string;
  api_key_ref?: string;
  api?: string;
}

/** `GET agent/settings`: the effective tiers and what the browser may choose. */
export interface IAgentSettings {
  tiers: { [name: string]: ITierSettings };
  /** The key references the browser may choose. */
  allowed_key_refs?: string[];
  /** The URLs a keyless tier may use (besides loopback, when allowed). */
  allowed_base_urls?: string[];
  /** Each key reference and the base URLs its key may be sent to. */
  key_bindings?: { [ref: string]: string[] };
  /** A keyless tier may use a loopback base URL. */
  allow_loopback_base_urls?: boolean;
  /** Per tier: ready, key set on the server, why not ready. */
  readiness?: { [name: string]: ITierReadiness };
  providers?: string[];
  [key: string]: any;
}

function jsonInit(method: string, body?: unknown): RequestInit {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  return init;
}

const enc = encodeURIComponent;

/** The typed agent REST API, bound to one server's settings. */
export class AgentApi implements IMemoryApi {
  constructor(
    readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()
  ) {}

  private req<T>(path: string, init: RequestInit): Promise<T> {
    return requestAgent<T>(path, init, this.settings);
  }

  status(): Promise<IAgentStatus> {
    return this.req('status', jsonInit('GET'));
  }

  getSettings(): Promise<IAgentSettings> {
    return this.req('settings', jsonInit('GET'));
  }

  putSettings(settings: { tiers: { [name: string]: ITierSettings } }): Promise<IAgentSettings> {
    return this.req('settings', jsonInit('PUT', settings));
  }

  async listChats(): Promise<IChatSummary[]> {
    const body = await this.req<{ chats: IChatSummary[] }>('chats', jsonInit('GET'));
    return body.chats;
  }

  /** `POST agent/chats`: a new chat of `agent` (absent: the server's default agent). */
  createChat(title?: string, agent?: string): Promise<IChatSummary> {
    const body: { title?: string; agent?: string } = {};
    if (title) {
      body.title = title;
    }
    if (agent) {
      body.agent = agent;
    }
    return this.req('chats', jsonInit('POST', body));
  }

  /** `GET agent/agents`: the agents the server hosts, the default one first. */
  async listAgents(): Promise<IAgentInfo[]> {
    const body = await this.req<{ agents: IAgentInfo[] }>('agents', jsonInit('GET'));
    return Array.isArray(body?.agents) ? body.agents : [];
  }

  renameChat(id: string, title: string): Promise<IChatSummary> {
    return this.req(`chats/${enc(id)}`, jsonInit('PATCH', { title }));
  }

  async deleteChat(id: string): Promise<void> {
    await this.req(`chats/${enc(id)}`, jsonInit('DELETE'));
  }

  getChat(id: string): Promise<IChatDetail> {
    return this.req(`chats/${enc(id)}`, jsonInit('GET'));
  }

  chatNotebook(id: string): Promise<any> {
    return this.req(`chats/${enc(id)}/notebook`, jsonInit('GET'));
  }

  /** Export the chat into the server's trace folder (a fresh name, never over a file). */
  writeChatNotebook(id: string): Promise<{ path: string; created: boolean }> {
    return this.req(`chats/${enc(id)}/notebook`, jsonInit('POST', {}));
  }

  send(
    id: string,
    text: string,
    view?: IView | null,
    attachments?: string[]
  ): Promise<ISendResult> {
    const body: any = { text };
    if (view) {
      body.view = view;
    }
    if (attachments && attachments.length) {
      body.attachments = attachments;
    }
    return this.req(`chats/${enc(id)}/messages`, jsonInit('POST', body));
  }

  breakRun(runId: string, hard: boolean): Promise<{ run_id: string; state: string }> {
    return this.req(`break/${enc(runId)}`, jsonInit('POST', { hard }));
  }

  /**
   * `POST agent/runs/{run_id}/proposals/{proposal_id}`: apply (all, or the edits of
   * `cells`) or discard. A conflict is an `AgentApiError` 409 `proposal_conflict` whose
   * message names the cells; a proposal decided already, 409 `proposal_decided`.
   */
  decideProposal(
    runId: string,
    proposalId: string,
    apply: boolean,
    cells?: string[] | null
  ): Promise<IProposalOutcome> {
    const body: { apply: boolean; cells?: string[] } = { apply };
    if (apply && cells) {
      body.cells = cells;
    }
    return this.req(`runs/${enc(runId)}/proposals/${enc(proposalId)}`, jsonInit('POST', body));
  }

  /** `POST agent/proposals/{proposal_id}/undo` (409 `proposal_conflict` when edited since). */
  undoProposal(proposalId: string): Promise<IProposalOutcome> {
    return this.req(`proposals/${enc(proposalId)}/undo`, jsonInit('POST', {}));
  }

  /** `GET agent/proposals?chat_id=`: the chat's proposals, whole (with their edits). */
  async listProposals(chatId: string): Promise<IProposalRow[]> {
    const body = await this.req<{ proposals: IProposalRow[] }>(
      `proposals?chat_id=${enc(chatId)}`,
      jsonInit('GET')
    );
    return Array.isArray(body?.proposals) ? body.proposals : [];
  }

  /**
   * `POST agent/runs/{run_id}/approvals/{approval_id}`: the person's answer to a wait;
   * `restOfTurn` approves the later waits of this turn too (404 unknown, 409 decided).
   */
  answerApproval(
    runId: string,
    approvalId: string,
    approve: boolean,
    restOfTurn = false
  ): Promise<any> {
    const body: { approve: boolean; rest_of_turn?: boolean } = { approve };
    if (restOfTurn) {
      body.rest_of_turn = true;
    }
    return this.req(`runs/${enc(runId)}/approvals/${enc(approvalId)}`, jsonInit('POST', body));
  }

  /** A run's record and steps; `full` leaves large fields (outputs, images) uncut. */
  runDetail(runId: string, full = true): Promise<IRunDetail> {
    return this.req(`runs/${enc(runId)}${full ? '?full=1' : ''}`, jsonInit('GET'));
  }

  /** Write the run's trace notebook (into the trace folder unless `path` is given). */
  writeRunNotebook(runId: string, path?: string): Promise<{ path: string; created: boolean }> {
    return this.req(`runs/${enc(runId)}/notebook`, jsonInit('POST', path ? { path } : {}));
  }

  /**
   * `GET agent/memories`: the facts, newest change first; with `q`, ranked by how well they
   * match (each with its `score`); `category` narrows to one category. `categories`: every
   * category of the person's facts with its count.
   */
  async listMemories(query: IMemoryQuery = {}): Promise<IMemoryList> {
    const params = new URLSearchParams();
    if (query.q) {
      params.set('q', query.q);
    }
    if (query.category) {
      params.set('category', query.category);
    }
    if (query.limit !== undefined) {
      params.set('limit', String(query.limit));
    }
    const qs = params.toString();
    const body = await this.req<IMemoryList>(`memories${qs ? `?${qs}` : ''}`, jsonInit('GET'));
    return {
      memories: Array.isArray(body?.memories) ? body.memories : [],
      categories: Array.isArray(body?.categories) ? body.categories : undefined
    };
  }

  /** `GET agent/memories/{id}`. */
  getMemory(id: string): Promise<IMemory> {
    return this.req(`memories/${enc(id)}`, jsonInit('GET'));
  }

  /** `POST agent/memories`: a fact the person adds (400 `credential` for a secret). */
  addMemory(text: string, category?: string): Promise<IMemory> {
    return this.req('memories', jsonInit('POST', category ? { text, category } : { text }));
  }

  /** `PATCH agent/memories/{id}`: a new text and/or category. */
  updateMemory(id: string, change: { text?: string; category?: string }): Promise<IMemory> {
    return this.req(`memories/${enc(id)}`, jsonInit('PATCH', change));
  }

  /** `DELETE agent/memories/{id}` (404 when it is gone). */
  async deleteMemory(id: string): Promise<void> {
    await this.req(`memories/${enc(id)}`, jsonInit('DELETE'));
  }

  /** The WebSocket URL of a chat's events, from `since` (token added as Jupyter does). */
  eventsUrl(chatId: string, since: number): string {
    const s = this.settings;
    let url =
      URLExt.join(s.wsUrl, API_NAMESPACE, 'chats', enc(chatId), 'events') +
      `?since=${since}`;
    if (s.appendToken && s.token) {
      url += `&token=${enc(s.token)}`;
    }
    return url;
  }
}
