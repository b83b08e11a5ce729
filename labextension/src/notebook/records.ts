/**
 * The agent's own notebooks: a run's trace and a chat's export carry the notebook-level
 * `metadata.jupyter_agent` their writer (`jupyter_agent/trace/notebook.py`) puts there: a
 * run's `run_id`, a whole chat's `chat_id`. They are records, never a target for the
 * person's code. Pure: no `@jupyterlab/*` import.
 */

/** True when `meta` (a notebook's `metadata.jupyter_agent`) marks one of the agent's records. */
export function isAgentNotebook(meta: unknown): boolean {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) {
    return false;
  }
  return 'run_id' in meta || 'chat_id' in meta;
}
