/**
 * The per-event reducer of a chat's runs: `reduceEvent(state, event)` is the state after
 * one event of `agent/chats/{id}/events`. Pure: no I/O, no signal, nothing mutated; the
 * same state comes back (identical) for an event that changes nothing shown, and a state
 * whose `runs` or `activeRunId` is a new object for one that does.
 *
 * - An event whose seq is not above `lastSeq` is ignored, so catch-up after a reconnect
 *   never doubles anything; an event of another chat too.
 * - Items are keyed: cells by `cell_id`, bubbles by `message_id`, steering by the
 *   `message_id` the POST answered and the `steering` event repeats, approvals by
 *   `approval_id`; the reply comes from `reply` only (`run_end` brings the turn for the
 *   footer).
 * - A `run_start` whose message an earlier run showed as steering (taken with a stop,
 *   never answered there) moves it: that run no longer shows it.
 * - A run shown from its record or steps (it ended before the view opened) ignores its
 *   events, except a `proposal`: a proposal outlives its run.
 * - `proposal` places the proposal (by id) in its run; the proposal itself, and its
 *   `proposal_end`, are the `ProposalStore`'s (`ChatState` gives them to it).
 */
import type { AgentEvent } from '../events';
import { recallFromEvent } from '../memory/recall';
import { approvalFromEvent, closeApproval, IApprovalItem } from './approvals';
import { addOutput, endCell, endStatus, newCell } from './cells';
import { endRun } from './ending';
import {
  approvalIndex,
  cellIndex,
  findRun,
  IAgentEvent,
  IChatRuns,
  ICellItem,
  IRunState,
  ISteeringItem,
  newRun,
  putRun,
  replaceItem,
  RunItem
} from './state';
import type { ITurnRecord } from './turns';

/** The state after one event (see the module comment). */
export function reduceEvent(state: IChatRuns, event: IAgentEvent): IChatRuns {
  if (event.chat_id !== undefined && event.chat_id !== state.chatId) {
    return state;
  }
  if (typeof event.seq !== 'number' || event.seq <= state.lastSeq) {
    return state;
  }
  const seen: IChatRuns = { ...state, lastSeq: event.seq };
  if (event.type === 'summary') {
    // History made by a summary run (not a turn of this chat): counted, not shown.
    return { ...seen, summaries: state.summaries + 1 };
  }
  if (event.type === 'title') {
    return seen; // the chat was named by a naming run: the view re-reads the title
  }
  const known = findRun(state, event.run_id);
  if (event.type === 'proposal') {
    return proposalPlaced(seen, known, event.run_id, event.proposal_id);
  }
  if (event.type === 'proposal_end' || (known && known.source !== 'events')) {
    // The store's; or ended before this view opened: its record and steps show it all.
    return seen;
  }
  const run = known ?? newRun(event.run_id, 'events');
  const next = reduceRun(run, event as AgentEvent);
  if (next === run) {
    return seen;
  }
  let activeRunId = state.activeRunId;
  if (event.type === 'run_start' && !next.ended) {
    activeRunId = next.runId;
  } else if (next.ended && activeRunId === next.runId) {
    activeRunId = null;
  }
  let runs = putRun(state.runs, next);
  const opened = event.type === 'run_start' ? next.userMessageId : null;
  if (opened) {
    // A message an earlier run took but did not answer (it came with a stop) opens this
    // run: shown here as its message, no longer as that run's steering.
    runs = runs.map(r => (r.runId === next.runId ? r : withoutSteering(r, opened)));
  }
  return { ...seen, runs, activeRunId };
}

/** `run` without its steering item `messageId` (the same run when it has none). */
function withoutSteering(run: IRunState, messageId: string): IRunState {
  const items = run.items.filter(i => !(i.kind === 'steering' && i.messageId === messageId));
  return items.length === run.items.length ? run : { ...run, items };
}

/**
 * One run after one of its events: a new run when the event shows something, else the
 * same run. Any shown event but `retry` ends a retry in progress.
 */
export function reduceRun(run: IRunState, event: AgentEvent): IRunState {
  const next = shownChange(run, event);
  return next === run || event.type === 'retry' ? next : { ...next, retry: null };
}

function shownChange(run: IRunState, event: AgentEvent): IRunState {
  switch (event.type) {
    case 'run_start':
      return {
        ...run,
        userText: run.userText || String(event.text ?? ''),
        userMessageId: event.message_id ?? run.userMessageId
      };
    case 'recall': {
      // What autorecall put in front of the model: shown above the run's replies.
      const recall = recallFromEvent(event);
      return recall ? { ...run, recall } : run;
    }
    case 'delta':
      return { ...run, streaming: run.streaming + String(event.text ?? '') };
    case 'bubble': {
      const id = event.message_id ?? null;
      const shown = id !== null && run.items.some(i => i.kind === 'bubble' && i.messageId === id);
      const items: RunItem[] = shown
        ? run.items
        : [...run.items, { kind: 'bubble', messageId: id, text: String(event.text ?? '') }];
      return { ...run, streaming: '', items };
    }
    case 'steering':
      return takeSteering(run, event.message_id ?? null, String(event.text ?? ''));
    case 'cell_start': {
      const at = cellIndex(run, event.cell_id);
      const lang = event.kind === 'bash' ? 'bash' : 'python';
      const items =
        at < 0
          ? [...run.items, newCell(event.cell_id, lang, event.code)]
          : replaceItem(run.items, at, {
              ...(run.items[at] as ICellItem),
              code: String(event.code ?? (run.items[at] as ICellItem).code)
            });
      return { ...run, streaming: '', items };
    }
    case 'cell_output': {
      // Always after its cell_start (kept in the server's history while the cell runs).
      const at = cellIndex(run, event.cell_id);
      if (at < 0) {
        return run;
      }
      const cell = run.items[at] as ICellItem;
      const grown = addOutput(cell, event.output);
      return grown === cell ? run : { ...run, items: replaceItem(run.items, at, grown) };
    }
    case 'cell_end': {
      const at = cellIndex(run, event.cell_id);
      const lang = event.kind === 'bash' ? 'bash' : 'python';
      const cell =
        at < 0 ? newCell(event.cell_id, lang, '') : (run.items[at] as ICellItem);
      const ended = endCell(cell, { ...event, status: endStatus(event) });
      const items = at < 0 ? [...run.items, ended] : replaceItem(run.items, at, ended);
      return { ...run, items };
    }
    case 'approval':
      if (approvalIndex(run, event.approval_id) >= 0) {
        return run;
      }
      return { ...run, streaming: '', items: [...run.items, approvalFromEvent(event)] };
    case 'approval_end': {
      const at = approvalIndex(run, event.approval_id);
      if (at < 0) {
        return run;
      }
      const closed = closeApproval(run.items[at] as IApprovalItem, Boolean(event.approve));
      return { ...run, items: replaceItem(run.items, at, closed) };
    }
    case 'retry':
      return {
        ...run,
        retry: {
          attempt: Number(event.attempt ?? 1),
          status: typeof event.status === 'number' ? event.status : null,
          waitS: typeof event.wait_s === 'number' ? event.wait_s : null
        }
      };
    case 'reply':
      return {
        ...run,
        streaming: '',
        reply: { text: String(event.text ?? ''), messageId: event.message_id ?? null }
      };
    case 'run_end':
      return endRun(run, (event.turn as ITurnRecord) ?? null, event.stop_reason, event.end_cause);
    default:
      return run; // an event type this panel does not show
  }
}

/** The run took a steering message: the person's queued one moves here, or it is new. */
function takeSteering(run: IRunState, messageId: string | null, text: string): IRunState {
  const at =
    messageId === null
      ? -1
      : run.items.findIndex(i => i.kind === 'steering' && i.messageId === messageId);
  if (at < 0) {
    return { ...run, items: [...run.items, { kind: 'steering', messageId, text, queued: false }] };
  }
  // Shown where the run took it (the order the steps will have after a reload).
  const mine = run.items[at] as ISteeringItem;
  const items = run.items.filter((_, i) => i !== at);
  return { ...run, items: [...items, { ...mine, queued: false }] };
}

/** A `proposal` event: its proposal shown (by id) in its run, once, whatever the run's source. */
function proposalPlaced(
  seen: IChatRuns,
  known: IRunState | undefined,
  runId: string,
  proposalId: string
): IChatRuns {
  const placed = (run: IRunState) =>
    run.items.some(i => i.kind === 'proposal' && i.proposalId === proposalId);
  if (seen.runs.some(placed)) {
    return seen;
  }
  const run = known ?? newRun(runId, 'events');
  const next: IRunState = {
    ...run,
    streaming: '',
    items: [...run.items, { kind: 'proposal', proposalId }]
  };
  return { ...seen, runs: putRun(seen.runs, next) };
}
