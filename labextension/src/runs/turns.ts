/**
 * A run's turn record (`GET agent/chats/{id}` lists them; `run_end` carries one) and what
 * the turn's footer makes of it: how the run ended and its figures (the history it held:
 * `history/window.ts`).
 *
 * Pure logic: no `@jupyterlab/*` or DOM import (jest tests it alone).
 */
import type { ITurnRecall } from '../memory/recall';

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
  /** What autorecall put in front of the model (absent when nothing). */
  recall?: ITurnRecall;
  /** The programs the turn ran, e.g. `["toolcaller@v4", "autorecall@v1"]`. */
  programs?: string[];
  /** The proposals the turn made (absent in older servers' JSON). */
  proposals?: ITurnProposal[];
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
    /** What the turn's boot window held (absent in older records). */
    window?: ITurnWindow;
  };
}

/**
 * `llm.window` of a turn record: the raw turns shown in full, the level-1 and level-2
 * chunk summaries, the turns the omission line names, and the window's tokens.
 */
export interface ITurnWindow {
  raw: number;
  l1: number;
  l2: number;
  omitted: number;
  tokens: number;
}

/** A turn's proposal as the chat JSON lists it (no edits, see `proposals.ts`). */
export interface ITurnProposal {
  proposal_id: string;
  path: string;
  status: string;
  applied: string[];
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
    case 'repeating':
      return 'Stopped: the same cell kept failing the same way';
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
