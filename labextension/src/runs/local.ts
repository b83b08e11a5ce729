/**
 * What the panel itself adds to a chat's runs, pure like the reducer: the person's own
 * messages (once the server answered where it routed them), notes, and the person's
 * answers to approvals while their requests are in flight.
 */
import { withAnswer } from './approvals';
import {
  approvalIndex,
  findRun,
  IApprovalAnswer,
  IChatRuns,
  IRunState,
  newRun,
  putRun,
  replaceItem
} from './state';

/** The run of this id, or a new one its events will build. */
function runOf(state: IChatRuns, runId: string): IRunState {
  return findRun(state, runId) ?? newRun(runId, 'events');
}

/**
 * A message the person sent, once the server answered `{run_id, routed, message_id}`:
 * the opening message of a run, or a steering message queued for it (its `steering`
 * event may have come first: then it is shown already). Always a new state.
 */
export function withUserMessage(
  state: IChatRuns,
  text: string,
  runId: string,
  routed: 'run' | 'mailbox',
  messageId: string | null = null
): IChatRuns {
  const run = runOf(state, runId);
  const opening =
    routed === 'run' &&
    (!run.userText || (messageId !== null && run.userMessageId === messageId));
  if (opening) {
    const next = {
      ...run,
      userText: run.userText || text,
      userMessageId: messageId ?? run.userMessageId
    };
    return {
      ...state,
      runs: putRun(state.runs, next),
      activeRunId: run.ended ? state.activeRunId : runId
    };
  }
  const shown =
    messageId !== null &&
    run.items.some(i => i.kind === 'steering' && i.messageId === messageId);
  const items = shown
    ? run.items
    : [...run.items, { kind: 'steering' as const, messageId, text, queued: !run.ended }];
  return { ...state, runs: putRun(state.runs, { ...run, items }) };
}

/** A note (a break asked for, a failure) at the end of a run. */
export function withNote(state: IChatRuns, runId: string, text: string): IChatRuns {
  const run = runOf(state, runId);
  const next = { ...run, items: [...run.items, { kind: 'note' as const, text }] };
  return { ...state, runs: putRun(state.runs, next) };
}

/**
 * An approval whose request left (busy), failed (error) or was answered (`answered`);
 * the same state for an approval this chat does not show.
 */
export function withApprovalAnswer(
  state: IChatRuns,
  runId: string,
  approvalId: string,
  busy: boolean,
  error: string | null = null,
  answered?: IApprovalAnswer
): IChatRuns {
  const run = findRun(state, runId);
  const at = run ? approvalIndex(run, approvalId) : -1;
  if (!run || at < 0) {
    return state;
  }
  const item = run.items[at];
  if (item.kind !== 'approval') {
    return state;
  }
  const next = { ...run, items: replaceItem(run.items, at, withAnswer(item, busy, error, answered)) };
  return { ...state, runs: putRun(state.runs, next) };
}
