/**
 * A chat's runs from the REST records, pure: the turn records of `GET agent/chats/{id}`
 * (`withTurns`), the steps of an ended run from `GET agent/runs/{id}` (`withSteps`), and
 * the place of a proposal read from `GET agent/proposals` (`withProposal`). The requests
 * themselves are `chats/hydration.ts`'s.
 *
 * An ended run is shown from its record until its steps arrive (and stays so if they
 * cannot be read); its events, if the server still holds them, are not needed and
 * ignored (see `reducer.ts`). A run built from events (live in this view) keeps them.
 */
import type { RunStep } from '../events';
import { IRecallInfo, recallFromEvent } from '../memory/recall';
import { approvalFromStep } from './approvals';
import { cellFromStep } from './cells';
import { endRun } from './ending';
import {
  findRun,
  IChatRuns,
  IRunState,
  newRun,
  placeProposal,
  putRun,
  RunItem
} from './state';
import type { ITurnRecord } from './turns';

/** A run as its record shows it: the message, progress bubbles, steering and reply. */
function runFromRecord(turn: ITurnRecord): IRunState {
  const items: RunItem[] = [];
  for (const r of turn.replies || []) {
    if (!r.done) {
      items.push({ kind: 'bubble', messageId: null, text: r.text });
    }
  }
  for (const s of turn.steering || []) {
    items.push({ kind: 'steering', messageId: null, text: s.text, queued: false });
  }
  const final = [...(turn.replies || [])].reverse().find(r => r.done);
  return {
    ...newRun(turn.run_id, 'record'),
    userText: turn.userText,
    items,
    reply: final ? { text: final.text, messageId: null } : null
  };
}

/**
 * The chat's turn records (oldest first) shown: a run already known (from events or steps)
 * keeps its items and gains the record; a new one shows what the record holds until its
 * steps arrive. `activeRunId`: the run in progress (its events build it). Always a new
 * state.
 *
 * `whole` (after a gap: some of the chat's events never reached this view, the server let
 * them go while it was away): the runs this view saw end, shown as they are. Any other run
 * with a record may lack its start or its end, so it is shown from its record again (its
 * steps follow); the runs go in the records' order, then those without one (in progress,
 * or ended after the records were read).
 */
export function withTurns(
  state: IChatRuns,
  turns: ReadonlyArray<ITurnRecord>,
  activeRunId: string | null,
  whole?: ReadonlySet<string>
): IChatRuns {
  if (whole) {
    const known = new Map(state.runs.map(r => [r.runId, r]));
    const recorded = new Set(turns.map(t => t.run_id));
    const fromRecords = turns.map(t => {
      const run = known.get(t.run_id);
      return run && whole.has(t.run_id) ? run : runFromRecord(t);
    });
    const runs = [...fromRecords, ...state.runs.filter(r => !recorded.has(r.runId))];
    const active = runs.some(r => r.runId === state.activeRunId && !r.ended);
    state = { ...state, runs, activeRunId: active ? state.activeRunId : null };
  }
  let runs = [...state.runs];
  let active = state.activeRunId;
  for (const turn of turns) {
    let run = runs.find(r => r.runId === turn.run_id);
    if (!run) {
      run = runFromRecord(turn);
      // Records come oldest first: keep them ahead of runs only known from events.
      const firstLive = runs.findIndex(r => !r.ended);
      runs.splice(firstLive < 0 ? runs.length : firstLive, 0, run);
    }
    runs = putRun(runs, endRun(run, turn, turn.llm?.stopReason, turn.llm?.endCause));
    if (active === run.runId) {
      active = null;
    }
  }
  if (activeRunId) {
    let run = runs.find(r => r.runId === activeRunId);
    if (!run) {
      run = newRun(activeRunId, 'events');
      runs.push(run);
    }
    if (!run.ended) {
      active = activeRunId;
    }
  }
  return { ...state, runs, activeRunId: active };
}

/** What a run's steps show: its message, items, reply and recall. */
export interface IStepsShown {
  userText: string | null;
  userMessageId: string | null;
  items: RunItem[];
  reply: IRunState['reply'];
  recall: IRecallInfo | null;
}

/**
 * What an ended run's steps show: its message, cells with their outputs and digests,
 * bubbles, steering, approvals (closed, as their `approval_end` left them), notices and
 * reply, in order, as its events showed them. Breaks and model calls are not shown.
 */
export function stepsShown(runId: string, steps: ReadonlyArray<RunStep>): IStepsShown {
  const shown: IStepsShown = {
    userText: null,
    userMessageId: null,
    items: [],
    reply: null,
    recall: null
  };
  const items = shown.items;
  for (const step of steps) {
    switch (step.type) {
      case 'user':
        shown.userText = step.text;
        shown.userMessageId = step.message_id;
        break;
      case 'steering':
        items.push({ kind: 'steering', messageId: step.message_id, text: step.text, queued: false });
        break;
      case 'bubble':
        if (step.status === 'ok') {
          items.push({ kind: 'bubble', messageId: step.message_id, text: step.text });
        }
        break;
      case 'reply':
        if (step.status === 'ok') {
          shown.reply = { text: step.text, messageId: step.message_id };
        }
        break;
      case 'cell':
        items.push(cellFromStep(step));
        for (const text of step.bubbles || []) {
          items.push({ kind: 'bubble', messageId: null, text });
        }
        break;
      case 'bash':
        items.push(cellFromStep(step));
        break;
      case 'recall':
        // Its hits carry category and chat title (the record's are cut short).
        if (step.status === 'ok') {
          shown.recall = recallFromEvent(step) ?? shown.recall;
        }
        break;
      case 'approval':
        items.push(approvalFromStep(runId, step));
        break;
      case 'notice':
        items.push({ kind: 'notice', text: `Notice: ${step.text}`, at: step.at });
        break;
      default:
        break;
    }
  }
  return shown;
}

/**
 * An ended run rebuilt from its steps (see `stepsShown`); the proposals it shows keep
 * their place after their cell (`agentCellOf`: a proposal's proposing cell). The same
 * state for a run that is unknown or built from events (live in this view).
 */
export function withSteps(
  state: IChatRuns,
  runId: string,
  steps: ReadonlyArray<RunStep>,
  agentCellOf: (proposalId: string) => string | null
): IChatRuns {
  const run = findRun(state, runId);
  if (!run || run.source === 'events') {
    return state;
  }
  const shown = stepsShown(runId, steps);
  let items = shown.items;
  for (const item of run.items) {
    if (item.kind === 'proposal') {
      items = placeProposal(items, item, agentCellOf(item.proposalId));
    }
  }
  const next: IRunState = {
    ...run,
    userText: shown.userText ?? run.userText,
    userMessageId: shown.userText !== null ? shown.userMessageId : run.userMessageId,
    items,
    reply: shown.reply,
    recall: shown.recall ?? run.recall,
    source: 'steps'
  };
  return { ...state, runs: putRun(state.runs, next) };
}

/**
 * A proposal read from a row shown in its run, after the cell that proposed it (at the
 * run's end when that cell is not shown); the same state when the run is not shown or
 * shows it already.
 */
export function withProposal(
  state: IChatRuns,
  runId: string,
  proposalId: string,
  agentCellId: string | null
): IChatRuns {
  const run = findRun(state, runId);
  if (!run || run.items.some(i => i.kind === 'proposal' && i.proposalId === proposalId)) {
    return state;
  }
  const items = placeProposal(run.items, { kind: 'proposal', proposalId }, agentCellId);
  return { ...state, runs: putRun(state.runs, { ...run, items }) };
}

/** The ids of ended runs shown from their record only (whose steps to load), oldest first. */
export function runsToLoad(state: IChatRuns): string[] {
  return state.runs.filter(r => r.source === 'record' && r.ended).map(r => r.runId);
}
