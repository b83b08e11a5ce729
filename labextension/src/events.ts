/**
 * The agent's events and a run's steps, as the server sends them.
 *
 * GENERATED from jupyter_agent/core/events/types.py and jupyter_agent/core/events/steps.py by
 * `python -m jupyter_agent.core.events.ts_mirror > labextension/src/events.ts`: do not edit.
 * tests/core/test_events.py fails when this file differs from the generated text.
 */

/** The fields every event has. */
export interface IEventEnvelope {
  type: string;
  chat_id: string;
  run_id: string;
  seq: number;
}

export type CellKind = "python" | "bash";

export type CellStatus = "ok" | "error" | "cancelled" | "timed_out";

export type StepStatus = "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";

// --- events ---

/** A run started; `text` and `message_id` are the message that started it. */
export interface IRunStartEvent extends IEventEnvelope {
  type: "run_start";
  started: string;
  text: string;
  message_id: string | null;
}

/** Autorecall (`autorecall@v1`) put `hits` (RecallHit JSON, packed: exactly what the model reads, in its order) in front of the model, taking `tokens`; published only when something was recalled, before the run's first model call. */
export interface IRecallEvent extends IEventEnvelope {
  type: "recall";
  hits: { [key: string]: any }[];
  tokens: number;
  program: string;
}

/** Streamed text of the reply being written (live only). */
export interface IDeltaEvent extends IEventEnvelope {
  type: "delta";
  text: string;
}

/** A progress message (`done` false), posted by the loop or by a cell. */
export interface IBubbleEvent extends IEventEnvelope {
  type: "bubble";
  text: string;
  done: boolean;
  message_id: string | null;
}

/** A cell (`kind` `python`) or a bash command (`kind` `bash`) starts. */
export interface ICellStartEvent extends IEventEnvelope {
  type: "cell_start";
  cell_id: string;
  kind: "python" | "bash";
  code: string;
}

/** One output of the running cell, in nbformat's shape, live while it runs. */
export interface ICellOutputEvent extends IEventEnvelope {
  type: "cell_output";
  cell_id: string;
  output: { [key: string]: any };
}

/** The cell ended. */
export interface ICellEndEvent extends IEventEnvelope {
  type: "cell_end";
  cell_id: string;
  kind: "python" | "bash";
  status: "ok" | "error" | "cancelled" | "timed_out";
  error: boolean;
  digest: string | null;
  duration_s: number | null;
  outputs: { [key: string]: any }[] | null;
  execution_count: number | null;
  stdout: string | null;
  stderr: string | null;
  returncode: number | null;
}

/** The run waits for the person (the `approval` policy): `kind` says what asks, `code` is the cell's code or the command (`""` for other kinds), `summary` one line of what it does. `POST agent/runs/{run_id}/approvals/{approval_id}` answers. */
export interface IApprovalEvent extends IEventEnvelope {
  type: "approval";
  approval_id: string;
  kind: "cell" | "bash" | "proposal" | "mcp" | "kernel";
  code: string;
  summary: string;
}

/** The wait ended: approved or not (denied, a break, the wall-time ceiling). */
export interface IApprovalEndEvent extends IEventEnvelope {
  type: "approval_end";
  approval_id: string;
  approve: boolean;
}

/** The agent proposed edits of the notebook at `path` (contents path); `edits` are the stored edit JSON (`{op, cell_id, after?, cell_type?, source?, old_source?, reason, diff, base}`). Nothing changes before the person applies. */
export interface IProposalEvent extends IEventEnvelope {
  type: "proposal";
  proposal_id: string;
  path: string;
  edits: { [key: string]: any }[];
}

/** A proposal was decided (`applied`, `partly`, `discarded`, `conflict`) or an applied one undone (`undone`); `run_id` is the run that proposed it. */
export interface IProposalEndEvent extends IEventEnvelope {
  type: "proposal_end";
  proposal_id: string;
  outcome: "applied" | "partly" | "discarded" | "conflict" | "undone";
}

/** The run took a message sent while it was going (it joins this turn, here). */
export interface ISteeringEvent extends IEventEnvelope {
  type: "steering";
  message_id: string | null;
  text: string;
  at: string;
}

/** The provider asked to wait (`status`: its HTTP status); `attempt` follows (live only). */
export interface IRetryEvent extends IEventEnvelope {
  type: "retry";
  attempt: number;
  status: number | null;
  wait_s: number | null;
}

/** The final reply (`done` true). */
export interface IReplyEvent extends IEventEnvelope {
  type: "reply";
  text: string;
  done: boolean;
  message_id: string | null;
}

/** The run ended; `turn` is its turn record (REST JSON), for the footer. */
export interface IRunEndEvent extends IEventEnvelope {
  type: "run_end";
  stop_reason: string;
  end_cause: string;
  turn: { [key: string]: any };
}

/** History made: a `history@v1` run stored a chunk summary of this chat (`chunk`: the item of `GET agent/chats/{id}/history`); `run_id` is the summary run's. */
export interface ISummaryEvent extends IEventEnvelope {
  type: "summary";
  chunk: { [key: string]: any };
}

/** The chat was named: a `title@v1` run gave it `title` after its first turn (`run_id` is the naming run's). */
export interface ITitleEvent extends IEventEnvelope {
  type: "title";
  title: string;
}

/** Any event. */
export type AgentEvent =
  | IRunStartEvent
  | IRecallEvent
  | IDeltaEvent
  | IBubbleEvent
  | ICellStartEvent
  | ICellOutputEvent
  | ICellEndEvent
  | IApprovalEvent
  | IApprovalEndEvent
  | IProposalEvent
  | IProposalEndEvent
  | ISteeringEvent
  | IRetryEvent
  | IReplyEvent
  | IRunEndEvent
  | ISummaryEvent
  | ITitleEvent;

/** The event types, in the order a run emits them. */
export const EVENT_TYPES = ["run_start", "recall", "delta", "bubble", "cell_start", "cell_output", "cell_end", "approval", "approval_end", "proposal", "proposal_end", "steering", "retry", "reply", "run_end", "summary", "title"] as const;

/** The types delivered live only, never kept for `?since=` catch-up. */
export const LIVE_ONLY: ReadonlyArray<string> = ["delta", "retry"];

// --- steps (GET agent/runs/{run_id}: `steps`) ---

/** The message that opened the run. */
export interface IUserStep {
  type: "user";
  seq: number;
  text: string;
  at: string;
  view: { [key: string]: any } | null;
  attachments: string[];
  message_id: string | null;
}

/** A message the run took while it was going (from a drain, or held at a final reply). */
export interface ISteeringStep {
  type: "steering";
  seq: number;
  text: string;
  at: string;
  view: { [key: string]: any } | null;
  attachments: string[];
  message_id: string | null;
}

/** A break read from the mailbox (a hard one is normally acted on by the host at once). */
export interface IBreakStep {
  type: "break";
  seq: number;
  hard: boolean;
  at: string;
}

/** A progress message (`chat.post` done false); `seq` is its effect's. */
export interface IBubbleStep {
  type: "bubble";
  seq: number;
  text: string;
  t: string;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  message_id: string | null;
}

/** The final reply (`chat.post` done true). */
export interface IReplyStep {
  type: "reply";
  seq: number;
  text: string;
  t: string;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  message_id: string | null;
}

/** A `cell.run`: its code, outputs (nbformat), digest, and how it ended. */
export interface ICellStep {
  type: "cell";
  seq: number;
  seqs: number[];
  cell_id: string;
  code: string;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  t: string;
  execution_count: number | null;
  duration_s: number | null;
  failed: boolean | null;
  app_calls: number;
  digest: string | null;
  outputs: { [key: string]: any }[];
  error: { [key: string]: any } | null;
  timeout_s: number | null;
  deterministic: boolean;
  outputs_truncated: boolean;
  end_status: "ok" | "error" | "cancelled" | "timed_out" | null;
  bubbles: string[];
  copies: string[];
}

/** A `bash.run`: `cell_id` is the run's `c<n>` (its event's and its notebook cell's). */
export interface IBashStep {
  type: "bash";
  seq: number;
  cell_id: string;
  command: string;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  t: string;
  returncode: number | null;
  stdout: string | null;
  stderr: string | null;
  digest: string | null;
  error: { [key: string]: any } | null;
  timeout_s: number | null;
  timed_out: boolean;
  duration_s: number | null;
  outputs_truncated: boolean;
  end_status: "ok" | "error" | "cancelled" | "timed_out" | null;
}

/** A top-level `http.post` (one model call of the loop). */
export interface IModelCallStep {
  type: "model_call";
  seq: number;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  t: string;
  http_status: number | null;
  attempts: number | null;
}

/** A `recall.search` (`autorecall@v1`): synthetic, not run. `code` and `text` are the `run_cell` call and result the model was shown before the message (both empty when nothing was recalled), `hits` the RecallHit JSON they show, `tokens` their cost; `query` is what was searched for. */
export interface IRecallStep {
  type: "recall";
  seq: number;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  t: string;
  program: string;
  query: string;
  code: string;
  text: string;
  hits: { [key: string]: any }[];
  tokens: number;
  error: { [key: string]: any } | null;
}

/** An `approval.wait`: a cell, a command, a proposal or an MCP call waited for the person. */
export interface IApprovalStep {
  type: "approval";
  seq: number;
  approval_id: string;
  kind: "cell" | "bash" | "proposal" | "mcp" | "kernel";
  code: string;
  summary: string;
  status: "ok" | "failed" | "cancelled" | "timed_out" | "unfinished" | "unreadable";
  t: string;
  approve: boolean | null;
  rest: boolean;
  by: "person" | "timeout" | "break" | null;
  parent: number | null;
}

/** A notice the run took from the mailbox (a proposal's outcome, ...): `text` as the host queued it (the model read it as `[notice] <text>`), `at` when it was queued. */
export interface INoticeStep {
  type: "notice";
  seq: number;
  text: string;
  at: string;
}

/** Any step of a run. */
export type RunStep =
  | IUserStep
  | ISteeringStep
  | IBreakStep
  | IBubbleStep
  | IReplyStep
  | ICellStep
  | IBashStep
  | IModelCallStep
  | IRecallStep
  | IApprovalStep
  | INoticeStep;

/** The step types. */
export const STEP_TYPES = ["user", "steering", "break", "bubble", "reply", "cell", "bash", "model_call", "recall", "approval", "notice"] as const;
