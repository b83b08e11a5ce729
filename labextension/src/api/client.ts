/**
 * A small typed client of the jupyter-agent REST API (`{base_url}agent/...`).
 *
 * Every request goes through JupyterLab's `ServerConnection`, so the server's token,
 * XSRF cookie and base URL are handled the same way as for every other Jupyter request.
 * Errors from the server come back as `{message, reason}` JSON and are raised as
 * `AgentApiError`. The JSON shapes are in `types.ts`.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IAgentInfo } from '../agents/agents';
import type { IMemory, IMemoryApi, IMemoryList, IMemoryQuery } from '../memory/model';
import type {
  IAgentSettings,
  IAgentStatus,
  IChatDetail,
  IChatSummary,
  IEvalState,
  IForkAnswer,
  IKernelVariable,
  IRerunAnswer,
  IRunDiff,
  IProposalOutcome,
  IProposalRow,
  IRunDetail,
  ISendResult,
  ITierSettings,
  IView
} from './types';

/** The path segment every route of the server extension lives under. */
export const API_NAMESPACE = 'agent';

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

function jsonInit(method: string, body?: unknown): RequestInit {
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'Content-Type': 'application/json' };
  }
  return init;
}

const enc = encodeURIComponent;

/** An error as the person reads it: the server's message and HTTP status, or the error's. */
export function errorText(err: unknown): string {
  if (err instanceof AgentApiError) {
    return `${err.message} (${err.status})`;
  }
  return err instanceof Error ? err.message : String(err);
}

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

  /** `PATCH agent/chats/{id}` `{model}`: the chat's own model (null: its agent's). */
  setChatModel(id: string, model: string | null): Promise<IChatSummary> {
    return this.req(`chats/${enc(id)}`, jsonInit('PATCH', { model }));
  }

  async deleteChat(id: string): Promise<void> {
    await this.req(`chats/${enc(id)}`, jsonInit('DELETE'));
  }

  getChat(id: string): Promise<IChatDetail> {
    return this.req(`chats/${enc(id)}`, jsonInit('GET'));
  }

  /**
   * `POST agent/chats/{id}/fork`: a new chat holding the turns 1..`turn` of this one; with
   * `message`, that message is sent in it at once (edit and resend).
   */
  forkChat(
    id: string,
    turn: number,
    message?: { text: string; view?: IView | null }
  ): Promise<IForkAnswer> {
    const body: { turn: number; message?: { text: string; view?: IView } } = { turn };
    if (message) {
      body.message = message.view ? { text: message.text, view: message.view } : { text: message.text };
    }
    return this.req(`chats/${enc(id)}/fork`, jsonInit('POST', body));
  }

  /** `POST agent/chats/import`: a new chat from an exported chat notebook (its JSON). */
  importChat(notebook: unknown, title?: string): Promise<IChatSummary> {
    return this.req('chats/import', jsonInit('POST', title ? { notebook, title } : { notebook }));
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

  /** `GET agent/runs/{id}/stats`: per model call usage and cost, and totals. */
  runStats(runId: string): Promise<{ calls: any[]; totals: { [key: string]: any } }> {
    return this.req(`runs/${enc(runId)}/stats`, jsonInit('GET'));
  }

  /** `POST agent/runs/{id}/rerun`: a rerun of the run on another model (null: the same). */
  rerun(runId: string, model: string | null): Promise<IRerunAnswer> {
    return this.req(`runs/${enc(runId)}/rerun`, jsonInit('POST', model ? { model } : {}));
  }

  /** `GET agent/runs/{a}/diff/{b}`: where two runs first part, and their totals. */
  runDiff(a: string, b: string): Promise<IRunDiff> {
    return this.req(`runs/${enc(a)}/diff/${enc(b)}`, jsonInit('GET'));
  }

  /** `POST agent/evals`: run the cases of a suite (a notebook or a folder of them). */
  startEval(suite: string): Promise<IEvalState> {
    return this.req('evals', jsonInit('POST', { suite }));
  }

  /** `GET agent/evals/{id}`: the eval's state, its cases' results, its report. */
  evalState(evalId: string): Promise<IEvalState> {
    return this.req(`evals/${enc(evalId)}`, jsonInit('GET'));
  }

  /** `GET agent/variables?path=`: the variables of the kernel of the person's notebook. */
  async variables(path: string): Promise<IKernelVariable[]> {
    const body = await this.req<{ variables?: IKernelVariable[] }>(
      `variables?path=${enc(path)}`,
      jsonInit('GET')
    );
    return Array.isArray(body?.variables) ? body.variables : [];
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
