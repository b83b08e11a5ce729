/**
 * Forks of a chat from the panel: "Fork from here" on a stored turn (a new chat whose
 * history is this chat's turns up to it) and "Edit and resend" on a turn's message (a fork
 * before it, the edited message sent in it at once), both through `POST
 * agent/chats/{id}/fork`; and the line a fork shows at its top (where it came from).
 * Nothing of the original chat changes.
 */
import { InputDialog } from '@jupyterlab/apputils';

import type { AgentApi } from '../api/client';
import type { IChatSummary, IView } from '../api/types';
import type { IRunState } from '../runs/state';

/** What a fork needs of its chat view. */
export interface IForkContext {
  api: AgentApi;
  chatId: string;
  runs: ReadonlyArray<IRunState>;
  getView: () => IView | null;
  /** Open the new chat (its tab). */
  openChat: (chat: IChatSummary) => Promise<unknown>;
  /** The chat list changed (a new chat). */
  notify: () => void;
}

/** The turn number (from 1) of the run's stored turn in its chat, or null when not stored. */
export function turnNumber(runs: ReadonlyArray<IRunState>, runId: string): number | null {
  let n = 0;
  for (const run of runs) {
    if (run.turn) {
      n += 1;
      if (run.runId === runId) {
        return n;
      }
    }
  }
  return null;
}

/**
 * Fork at the run's turn; with `edit`, ask for the edited message first (cancel: nothing
 * happens) and fork before the turn with it. Throws what the server answered.
 */
export async function forkFrom(ctx: IForkContext, runId: string, edit: boolean): Promise<void> {
  const n = turnNumber(ctx.runs, runId);
  const run = ctx.runs.find(r => r.runId === runId);
  if (n === null || !run) {
    return;
  }
  if (!edit) {
    const chat = await ctx.api.forkChat(ctx.chatId, n);
    ctx.notify();
    await ctx.openChat(chat);
    return;
  }
  const asked = await InputDialog.getText({
    title: 'Edit and resend',
    label: 'A new chat holds the turns before this one, then sends your edited message.',
    text: run.userText,
    okLabel: 'Resend'
  });
  const text = asked.button.accept ? (asked.value ?? '').trim() : '';
  if (!text) {
    return;
  }
  const chat = await ctx.api.forkChat(ctx.chatId, n - 1, { text, view: ctx.getView() });
  ctx.notify();
  await ctx.openChat(chat);
}

/**
 * `/fork` (fork at the chat's last turn) and `/fork N` (at turn N): the note to show, or
 * null when the new chat opened. Throws what the server answered.
 */
export async function slashFork(ctx: IForkContext, arg: string): Promise<string | null> {
  const stored = ctx.runs.filter(r => r.turn).length;
  const n = arg ? Number(arg) : stored;
  if (!Number.isInteger(n) || n < 0 || n > stored) {
    return `/fork takes a turn from 0 to ${stored} (none: the last one): nothing was made.`;
  }
  if (stored === 0 && !arg) {
    return 'This chat has no turn yet: nothing to fork.';
  }
  const chat = await ctx.api.forkChat(ctx.chatId, n);
  ctx.notify();
  await ctx.openChat(chat);
  return null;
}

/** The line at the top of a fork: where it came from. */
export function originText(origin: { chat_id: string; turn: number }, title?: string): string {
  const from = title ? `“${title}”` : origin.chat_id;
  return origin.turn === 0
    ? `Forked from ${from}, before its first turn`
    : `Forked from ${from} at turn ${origin.turn}: its turns up to there are this chat's first ones`;
}
