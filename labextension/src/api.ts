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

/** The path segment every route of the server extension lives under. */
export const API_NAMESPACE = 'agent';

/** One model tier as `GET agent/status` reports it (never a key value). */
export interface ITierStatus {
  provider: string;
  model: string;
  ready: boolean;
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
