/**
 * The JSON the agent REST API answers and takes (`{base_url}agent/...`), as types only.
 * Each concern's own records are typed in its folder (`runs/turns.ts`, `memory/model.ts`,
 * `agents/agents.ts`); these are the shapes `client.ts` passes through.
 */
import type { RunStep } from '../events';
import type { ITurnRecord } from '../runs/turns';
import type { IMention } from '../chats/mentions';

/** Whether a tier can run, and why not (never a key value). */
export interface ITierReadiness {
  ready: boolean;
  /** The tier's key reference resolves on the server (false for a keyless tier). */
  key_set?: boolean;
  /** Why the tier is not ready, e.g. "env:OPENAI_API_KEY is not set on the server". */
  reason?: string | null;
  /** What runs of the tier assume of its model (`GET agent/settings` only). */
  profile?: IModelProfile;
}

/** What a person may say of a tier's model (a tier's `profile` in the settings). */
export interface IProfileFields {
  context_window?: number;
  max_output?: number;
  tool_mode?: 'native' | 'fenced' | 'xml';
}

/** The profile runs assume; `assumed`: no built-in profile matched and nobody set one. */
export interface IModelProfile extends Required<IProfileFields> {
  assumed: boolean;
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

/** One chat as `GET agent/chats` lists it. */
export interface IChatSummary {
  id: string;
  title: string;
  created: string;
  updated: string;
  /** The agent the chat talks to (absent from servers older than agents: `agent`). */
  agent?: string;
  active_run_id: string | null;
  /** The chat and turn this chat was forked from (absent or null: not a fork). */
  forked_from?: { chat_id: string; turn: number } | null;
  /** The chat's own model (a tier or model name; absent or null: its agent's codegen tier). */
  model?: string | null;
}

/** `POST agent/chats/{id}/fork`: the new chat, and the run of its message (edit and resend). */
export interface IForkAnswer extends IChatSummary {
  run_id?: string | null;
  routed?: string;
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
  /** The cells and variables the message mentions (`@cell:3`, `@df`). */
  mentions?: IMention[];
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
  /** The person's word on the model: window, output cap, tool mode. */
  profile?: IProfileFields;
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

/** One variable of the person's kernel (`GET agent/variables`). */
export interface IKernelVariable {
  name: string;
  type: string;
  summary: string;
}

/** `POST agent/runs/{id}/rerun`. */
export interface IRerunAnswer {
  run_id: string;
  rerun_of: string;
  program: string;
  model: string | null;
}

/** One run of a diff (`GET agent/runs/{a}/diff/{b}`). */
export interface IDiffSide {
  run_id: string;
  program?: string;
  model?: string | null;
  rerun_of?: string | null;
}

/** `GET agent/runs/{a}/diff/{b}`: where two runs first part, and their totals. */
export interface IRunDiff {
  identical: boolean;
  tiers_differ?: boolean;
  a: IDiffSide;
  b: IDiffSide;
  divergence: {
    index: number;
    effect_a: string | null;
    effect_b: string | null;
    part: 'effect' | 'intent' | 'result';
    what: string;
    model?: { a: string | null; b: string | null };
    [diff: string]: any;
  } | null;
  summary: { a: { [key: string]: any }; b: { [key: string]: any } };
}

/** One case run of an eval (`GET agent/evals/{id}` `results`). */
export interface IEvalResult {
  case: string;
  model: string | null;
  repeat: number;
  status: 'pending' | 'running' | 'passed' | 'failed' | 'error';
  run_id: string | null;
  message: string;
}

/** An eval's state (`POST agent/evals`, `GET agent/evals/{id}`). */
export interface IEvalState {
  eval_id: string;
  status: 'running' | 'done';
  suite: string | null;
  total: number;
  finished: number;
  passed: number;
  report: string | null;
  error: string | null;
  results: IEvalResult[];
}
