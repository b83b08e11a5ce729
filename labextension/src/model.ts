/**
 * The chat state of the panel, built from the server's event stream and records.
 *
 * Pure logic: no `@jupyterlab/*` or DOM import, so jest tests it with ts-jest alone.
 *
 * A chat is a list of runs (one per turn). Each run holds, in the order they happened,
 * the items the person sees: steering messages, progress bubbles, cells (python or bash)
 * and notes; plus the opening user message, the text being streamed, a provider retry in
 * progress, the final reply and, once ended, the turn record.
 *
 * Sources, and how they combine without duplicates:
 * - events `{type, chat_id, run_id, seq, ...}` (`applyEvent`): an event whose seq is not
 *   above the last one applied is ignored, so catch-up after a reconnect (`since=SEQ`)
 *   never doubles anything; every item is also keyed (cells by `cell_id`, messages by
 *   `message_id`), so a replay from `since=0` is idempotent;
 * - a running cell's `cell_output` events add its live outputs (python) or stdout/stderr
 *   text (bash); its `cell_end` replaces them with the final ones and says how it ended
 *   (`status`: ok, error, cancelled, timed_out);
 * - turn records from `GET agent/chats/{id}` (`loadTurns`): a run known only from its
 *   record shows its user text, bubbles and reply; if its `run_start` event then arrives
 *   (the server still holds its events), the run is rebuilt from the events, which also
 *   carry its cells;
 * - a run's notebook (`restoreFromNotebook`) gives the cells of a run whose events the
 *   server no longer holds (after a server restart).
 * - the person's own messages (`addUserMessage`), which the events do not carry.
 */

/** An event of `agent/chats/{id}/events`. */
export interface IAgentEvent {
  type: string;
  chat_id: string;
  run_id: string;
  seq: number;
  [key: string]: any;
}

/** How a cell ended (`cell_end`'s `status`), or `running` while it runs. */
export type CellStatus = 'running' | 'ok' | 'error' | 'cancelled' | 'timed_out';

const ENDED_STATUSES: ReadonlyArray<string> = ['ok', 'error', 'cancelled', 'timed_out'];

/** `cell_output`: one output of a running cell, in nbformat's shape (live). */
export interface ICellOutputEvent extends IAgentEvent {
  type: 'cell_output';
  cell_id: string;
  output: { output_type: string; [key: string]: any };
}

/** `cell_end`: the cell's final outputs (python) or stdout/stderr (bash), and its status. */
export interface ICellEndEvent extends IAgentEvent {
  type: 'cell_end';
  cell_id: string;
  kind: 'python' | 'bash';
  status?: Exclude<CellStatus, 'running'>;
  error: boolean;
  digest: string | null;
  duration_s: number | null;
  outputs?: any[];
  execution_count?: number | null;
  stdout?: string;
  stderr?: string;
  returncode?: number | null;
}

/** Token usage of a turn, with the seed's JSON keys. */
export interface IUsage {
  in: number;
  out: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

/** A turn record as REST JSON (`jupyter_agent.core.turns.TurnRecord.to_json`). */
export interface ITurnRecord {
  id: string;
  chat_id: string;
  run_id: string;
  userText: string;
  steering: { text: string; at: string }[];
  replies: { text: string; done: boolean }[];
  fromAgent?: string;
  traceRef?: string;
  interrupted: boolean;
  created: string;
  durationMs: number;
  model: string | null;
  llm: {
    stopReason: string;
    endCause: string;
    modelCalls: number;
    cells: number;
    usage: IUsage;
    cost: number | null;
    fingerprints?: { [key: string]: string };
  };
}

/** A cell the agent ran (python) or a command (bash). */
export interface ICellItem {
  kind: 'cell';
  cellId: string;
  lang: 'python' | 'bash';
  code: string;
  running: boolean;
  /** How it ended (`running` until its `cell_end`). */
  status: CellStatus;
  /**
   * nbformat outputs (python; bash outputs are made from stdout/stderr). While the cell
   * runs, the live outputs as they came (stream pieces unmerged); at its end, the final ones.
   */
  outputs: any[];
  executionCount: number | null;
  error: boolean;
  /** The text the model saw for this cell, when known. */
  digest: string | null;
  durationS: number | null;
  stdout: string;
  stderr: string;
  returncode: number | null;
}

/** A progress bubble (a chat.post with done false). */
export interface IBubbleItem {
  kind: 'bubble';
  messageId: string | null;
  text: string;
}

/** A message of the person sent while the run was going (it went to the mailbox). */
export interface ISteeringItem {
  kind: 'steering';
  text: string;
  /** True until the run's record confirms the run took it. */
  queued: boolean;
}

/** A remark of the panel or of a restored trace (a break, a cancelled cell). */
export interface INoteItem {
  kind: 'note';
  text: string;
}

export type RunItem = ICellItem | IBubbleItem | ISteeringItem | INoteItem;

/** A provider retry in progress (`retry` event). */
export interface IRetryInfo {
  attempt: number;
  status: number | null;
  waitS: number | null;
}

/** One run (one turn) of a chat. */
export interface IRunState {
  runId: string;
  userText: string;
  items: RunItem[];
  /** Model text streamed by `delta` events and not yet turned into a bubble or reply. */
  streaming: string;
  reply: { text: string; messageId: string | null } | null;
  retry: IRetryInfo | null;
  ended: boolean;
  stopReason: string | null;
  endCause: string | null;
  turn: ITurnRecord | null;
  /** Where the items came from: events (live or caught up), a record, or a notebook. */
  source: 'events' | 'record' | 'notebook';
}

/** What the end of a run means for the person, from its `endCause`. */
export function describeEnd(endCause: string | null, stopReason?: string | null): string {
  switch (endCause) {
    case null:
    case undefined:
      return stopReason ? `Ended (${stopReason})` : '';
    case 'done':
      return 'Done';
    case 'length':
      return 'Wrapped up: the reply hit the length limit';
    case 'break_soft':
      return 'Stopped';
    case 'break_hard':
      return 'Stopped now (hard stop)';
    case 'error':
      return 'Ended with an error';
    case 'restart':
      return 'Interrupted: the server restarted during this run';
    default:
      if (endCause.startsWith('ceiling:')) {
        const what = endCause.slice('ceiling:'.length).replace(/_/g, ' ');
        return `Wrapped up: reached the ${what} ceiling`;
      }
      return `Ended (${endCause})`;
  }
}

/** Format a turn's figures: tokens, cache, cost, cells, duration, model. */
export function turnStats(turn: ITurnRecord): string[] {
  const u = turn.llm.usage || ({} as IUsage);
  const parts = [
    `${fmtCount(u.in)} in / ${fmtCount(u.out)} out`,
    `cache ${fmtCount(u.cacheRead)} read / ${fmtCount(u.cacheWrite)} write`,
    turn.llm.cost === null || turn.llm.cost === undefined
      ? 'cost n/a'
      : `$${turn.llm.cost.toFixed(4)}`,
    `${turn.llm.cells} cell${turn.llm.cells === 1 ? '' : 's'}`,
    `${(turn.durationMs / 1000).toFixed(1)} s`
  ];
  if (turn.model) {
    parts.push(turn.model);
  }
  return parts;
}

function fmtCount(n: number | undefined): string {
  const v = n || 0;
  return v >= 10000 ? `${(v / 1000).toFixed(1)}k` : String(v);
}

function newRun(runId: string, source: IRunState['source']): IRunState {
  return {
    runId,
    userText: '',
    items: [],
    streaming: '',
    reply: null,
    retry: null,
    ended: false,
    stopReason: null,
    endCause: null,
    turn: null,
    source
  };
}

function newCell(cellId: string, lang: 'python' | 'bash', code: string): ICellItem {
  return {
    kind: 'cell',
    cellId,
    lang,
    code,
    running: true,
    status: 'running',
    outputs: [],
    executionCount: null,
    error: false,
    digest: null,
    durationS: null,
    stdout: '',
    stderr: '',
    returncode: null
  };
}

/**
 * The state of one chat. Mutated in place by its methods; each returns whether anything
 * changed, so a view re-renders only then.
 */
export class ChatState {
  constructor(readonly chatId: string) {}

  /** The runs, oldest first. */
  readonly runs: IRunState[] = [];
  /** The highest event seq applied (the `since` of the next connection). */
  lastSeq = 0;
  /** The run in progress, if any. */
  activeRunId: string | null = null;

  /** The run with this id, if known. */
  run(runId: string): IRunState | undefined {
    return this.runs.find(r => r.runId === runId);
  }

  /** The run with this id, created (at the end) when it is new. */
  private ensureRun(runId: string, source: IRunState['source']): IRunState {
    let run = this.run(runId);
    if (!run) {
      run = newRun(runId, source);
      this.runs.push(run);
    }
    return run;
  }

  /** Whether a run is going (the Stop button shows). */
  get running(): boolean {
    return this.activeRunId !== null;
  }

  /**
   * Apply one event. Returns false (and changes nothing) for an event already applied
   * (seq not above `lastSeq`) or of another chat.
   */
  applyEvent(event: IAgentEvent): boolean {
    if (event.chat_id !== undefined && event.chat_id !== this.chatId) {
      return false;
    }
    if (typeof event.seq !== 'number' || event.seq <= this.lastSeq) {
      return false;
    }
    this.lastSeq = event.seq;
    const known = this.run(event.run_id);
    if (event.type === 'run_start') {
      if (known && known.source !== 'events') {
        // Known from its record or notebook: rebuild it from the events, which carry all.
        const rebuilt = newRun(event.run_id, 'events');
        rebuilt.userText = known.userText;
        rebuilt.turn = known.turn;
        rebuilt.ended = known.ended;
        rebuilt.stopReason = known.stopReason;
        rebuilt.endCause = known.endCause;
        this.runs.splice(this.runs.indexOf(known), 1, rebuilt);
      } else if (!known) {
        this.ensureRun(event.run_id, 'events');
      }
      const run = this.run(event.run_id)!;
      const text = event.text ?? event.userText ?? event.user_text;
      if (typeof text === 'string' && text && !run.userText) {
        run.userText = text;
      }
      if (!run.ended) {
        this.activeRunId = event.run_id;
      }
      return true;
    }
    if (known && known.source !== 'events' && event.type !== 'run_end') {
      // Events of a run shown from its record, whose start is no longer held: the record
      // already shows what they would.
      return true;
    }
    const run = known ?? this.ensureRun(event.run_id, 'events');
    if (event.type !== 'retry') {
      run.retry = null;
    }
    switch (event.type) {
      case 'delta':
        run.streaming += String(event.text ?? '');
        break;
      case 'bubble': {
        run.streaming = '';
        const id = event.message_id ?? null;
        if (
          id === null ||
          !run.items.some(i => i.kind === 'bubble' && i.messageId === id)
        ) {
          run.items.push({ kind: 'bubble', messageId: id, text: String(event.text ?? '') });
        }
        break;
      }
      case 'cell_start': {
        run.streaming = '';
        const cellId = String(event.cell_id);
        const lang = event.kind === 'bash' ? 'bash' : 'python';
        const existing = this.findCell(run, cellId);
        if (existing) {
          existing.code = String(event.code ?? existing.code);
        } else {
          run.items.push(newCell(cellId, lang, String(event.code ?? '')));
        }
        break;
      }
      case 'cell_output': {
        // Always after its cell_start (kept in the server's history while the cell runs).
        const cell = this.findCell(run, String(event.cell_id));
        if (!cell || !cell.running || !event.output || typeof event.output !== 'object') {
          return false; // or late: the cell's end already brought its final outputs
        }
        const output = event.output;
        if (cell.lang === 'bash') {
          if (output.output_type !== 'stream') {
            return false;
          }
          if (output.name === 'stderr') {
            cell.stderr += String(output.text ?? '');
          } else {
            cell.stdout += String(output.text ?? '');
          }
        } else {
          cell.outputs.push(output);
        }
        break;
      }
      case 'cell_end': {
        const cellId = String(event.cell_id);
        let cell = this.findCell(run, cellId);
        if (!cell) {
          cell = newCell(cellId, event.kind === 'bash' ? 'bash' : 'python', '');
          run.items.push(cell);
        }
        cell.running = false;
        cell.error = Boolean(event.error);
        cell.status = ENDED_STATUSES.includes(event.status)
          ? (event.status as CellStatus)
          : cell.error
            ? 'error'
            : 'ok';
        cell.digest = typeof event.digest === 'string' ? event.digest : null;
        cell.durationS = typeof event.duration_s === 'number' ? event.duration_s : null;
        if (cell.lang === 'bash') {
          cell.stdout = String(event.stdout ?? '');
          cell.stderr = String(event.stderr ?? '');
          cell.returncode = typeof event.returncode === 'number' ? event.returncode : null;
        } else {
          cell.outputs = Array.isArray(event.outputs) ? event.outputs : [];
          cell.executionCount =
            typeof event.execution_count === 'number' ? event.execution_count : null;
        }
        break;
      }
      case 'retry':
        run.retry = {
          attempt: Number(event.attempt ?? 1),
          status: typeof event.status === 'number' ? event.status : null,
          waitS: typeof event.wait_s === 'number' ? event.wait_s : null
        };
        break;
      case 'reply':
        run.streaming = '';
        run.reply = { text: String(event.text ?? ''), messageId: event.message_id ?? null };
        break;
      case 'run_end':
        this.endRun(run, event.turn ?? null, event.stopReason, event.endCause);
        break;
      default:
        // An event type this panel does not know: kept out of the view.
        return false;
    }
    return true;
  }

  private findCell(run: IRunState, cellId: string): ICellItem | undefined {
    return run.items.find(
      (i): i is ICellItem => i.kind === 'cell' && i.cellId === cellId
    );
  }

  private endRun(
    run: IRunState,
    turn: ITurnRecord | null,
    stopReason?: string,
    endCause?: string
  ): void {
    run.ended = true;
    run.streaming = '';
    run.retry = null;
    run.turn = turn ?? run.turn;
    run.stopReason = stopReason ?? turn?.llm?.stopReason ?? run.stopReason;
    run.endCause = endCause ?? turn?.llm?.endCause ?? run.endCause;
    for (const item of run.items) {
      if (item.kind === 'cell' && item.running) {
        // The run ended under it (a hard stop, a crash): it did not finish.
        item.running = false;
        item.status = 'cancelled';
      }
    }
    if (turn) {
      if (!run.userText && turn.userText) {
        run.userText = turn.userText;
      }
      const shown = run.items.filter((i): i is ISteeringItem => i.kind === 'steering');
      for (const s of turn.steering || []) {
        const mine = shown.find(i => i.text === s.text && i.queued);
        if (mine) {
          mine.queued = false;
        } else if (!shown.some(i => i.text === s.text)) {
          run.items.push({ kind: 'steering', text: s.text, queued: false });
        }
      }
      if (!run.reply) {
        const final = [...(turn.replies || [])].reverse().find(r => r.done);
        if (final) {
          run.reply = { text: final.text, messageId: null };
        }
      }
    }
    if (this.activeRunId === run.runId) {
      this.activeRunId = null;
    }
  }

  /**
   * Record a message the person sent, once the server answered `{run_id, routed}`:
   * the opening message of a new run, or a steering message queued in the running one.
   */
  addUserMessage(text: string, runId: string, routed: 'run' | 'mailbox'): void {
    const run = this.ensureRun(runId, 'events');
    if (routed === 'run') {
      if (!run.userText) {
        run.userText = text;
      }
      if (!run.ended) {
        this.activeRunId = runId;
      }
    } else {
      run.items.push({ kind: 'steering', text, queued: !run.ended });
    }
  }

  /** Add a note (a break asked for, a failure) to a run. */
  addNote(runId: string, text: string): void {
    this.ensureRun(runId, 'events').items.push({ kind: 'note', text });
  }

  /**
   * Show the chat's turn records (`GET agent/chats/{id}`), oldest first. Runs already
   * known from events keep their items and gain the record.
   */
  loadTurns(turns: ITurnRecord[], activeRunId: string | null): void {
    for (const turn of turns) {
      let run = this.run(turn.run_id);
      if (!run) {
        run = newRun(turn.run_id, 'record');
        // Records come oldest first: keep them ahead of runs only known from events.
        const firstLive = this.runs.findIndex(r => !r.ended);
        if (firstLive < 0) {
          this.runs.push(run);
        } else {
          this.runs.splice(firstLive, 0, run);
        }
        run.userText = turn.userText;
        for (const r of turn.replies || []) {
          if (!r.done) {
            run.items.push({ kind: 'bubble', messageId: null, text: r.text });
          }
        }
        for (const s of turn.steering || []) {
          run.items.push({ kind: 'steering', text: s.text, queued: false });
        }
      }
      this.endRun(run, turn, turn.llm?.stopReason, turn.llm?.endCause);
    }
    if (activeRunId && !this.run(activeRunId)) {
      this.ensureRun(activeRunId, 'record');
    }
    if (activeRunId) {
      const run = this.run(activeRunId)!;
      if (!run.ended) {
        this.activeRunId = activeRunId;
      }
    }
  }

  /**
   * Rebuild a run shown from its record from the run's notebook
   * (`GET agent/runs/{run_id}/notebook`): its cells with their outputs and digests, its
   * bubbles, steering and notes, in order. Returns false when the run is unknown or
   * already built from events.
   */
  restoreFromNotebook(runId: string, notebook: any): boolean {
    const run = this.run(runId);
    if (!run || run.source !== 'record') {
      return false;
    }
    const items: RunItem[] = [];
    for (const cell of notebook?.cells || []) {
      const meta = cell?.metadata?.jupyter_agent || {};
      const source = Array.isArray(cell.source) ? cell.source.join('') : String(cell.source ?? '');
      if (cell.cell_type === 'code') {
        const lang = meta.kind === 'bash' ? 'bash' : 'python';
        const item = newCell(String(meta.cell_id ?? cell.id ?? ''), lang, source);
        item.running = false;
        item.digest = typeof meta.digest === 'string' ? meta.digest : null;
        item.durationS = typeof meta.duration_s === 'number' ? meta.duration_s : null;
        item.error = meta.status !== undefined && meta.status !== 'ok' && meta.status !== 'done';
        item.status = ENDED_STATUSES.includes(meta.status)
          ? meta.status
          : item.error
            ? 'error'
            : 'ok';
        if (lang === 'bash') {
          for (const out of cell.outputs || []) {
            const text = Array.isArray(out.text) ? out.text.join('') : String(out.text ?? '');
            if (out.name === 'stderr') {
              item.stderr += text;
            } else {
              item.stdout += text;
            }
          }
          item.returncode = typeof meta.returncode === 'number' ? meta.returncode : null;
          item.error = item.error || (item.returncode !== null && item.returncode !== 0);
          if (item.error && item.status === 'ok') {
            item.status = 'error';
          }
        } else {
          item.outputs = cell.outputs || [];
          item.executionCount = cell.execution_count ?? null;
          item.error = item.error || item.outputs.some((o: any) => o.output_type === 'error');
          if (item.error && item.status === 'ok') {
            item.status = 'error';
          }
        }
        items.push(item);
      } else if (meta.kind === 'bubble') {
        items.push({ kind: 'bubble', messageId: null, text: stripHead(source) });
      } else if (meta.kind === 'steering') {
        items.push({ kind: 'steering', text: stripHead(source), queued: false });
      } else if (meta.kind === 'note') {
        items.push({ kind: 'note', text: source.replace(/^> \*\*Note:\*\* /, '') });
      }
    }
    run.items = items;
    run.source = 'notebook';
    return true;
  }

  /** The ids of runs shown from a record only (candidates for `restoreFromNotebook`). */
  recordOnlyRuns(): string[] {
    return this.runs.filter(r => r.source === 'record' && r.ended).map(r => r.runId);
  }
}

/** Drop the `**who** · time` heading (and view lines) of an exported markdown message. */
function stripHead(source: string): string {
  const at = source.indexOf('\n\n');
  return at >= 0 ? source.slice(at + 2) : source;
}
