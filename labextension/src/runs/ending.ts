/**
 * The end of a run (its `run_end` event, or its turn record after a reload), pure: what
 * was still going stops, the record is kept for the footer.
 */
import { recallFromTurn } from '../memory/recall';
import { cancelCell } from './cells';
import type { IRunState, RunItem } from './state';
import type { ITurnRecord } from './turns';

/**
 * The run as its end leaves it: ended, nothing streamed or retried, its record (if given)
 * and how it ended; a cell still running is cancelled (the run ended under it), a queued
 * steering message is in the turn, an open approval waits no more.
 */
export function endRun(
  run: IRunState,
  turn: ITurnRecord | null,
  stopReason?: string | null,
  endCause?: string | null
): IRunState {
  const record = turn ?? run.turn;
  // The event's hits carry more (category, chat title); the record's come after a reload.
  const recorded = recallFromTurn(record);
  let recall = run.recall;
  if (!recall) {
    recall = recorded;
  } else if (recorded && recall.tokens === null) {
    recall = { ...recall, tokens: recorded.tokens, program: recorded.program };
  }
  return {
    ...run,
    ended: true,
    streaming: '',
    retry: null,
    turn: record,
    recall,
    stopReason: stopReason ?? turn?.llm?.stopReason ?? run.stopReason,
    endCause: endCause ?? turn?.llm?.endCause ?? run.endCause,
    items: run.items.map(endItem),
    userText: !run.userText && turn?.userText ? turn.userText : run.userText
  };
}

function endItem(item: RunItem): RunItem {
  switch (item.kind) {
    case 'cell':
      return cancelCell(item);
    case 'steering':
      // Every message routed to a run is in its turn.
      return item.queued ? { ...item, queued: false } : item;
    case 'approval':
      // Nothing waits any more.
      return item.open ? { ...item, open: false, busy: false } : item;
    default:
      return item;
  }
}
