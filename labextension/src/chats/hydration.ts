/**
 * The REST hydration of a chat's state: what a chat view reads when it opens (after a
 * reload, a server restart, or simply a tab opened late), in this order:
 *
 * 1. the chat and its turn records (`GET agent/chats/{id}`): every ended turn shows from
 *    its record at once;
 * 2. its proposals with their edits (`GET agent/proposals?chat_id=`: the turns name them;
 *    a decided one may have been applied or undone since), before the steps, which keep
 *    them in place;
 * 3. (the caller opens the event stream here: the server's kept events build the run in
 *    progress)
 * 4. the steps of the newest ended runs (`GET agent/runs/{id}?full=1`), newest first: the
 *    cells with their outputs, as the events showed them. A run whose trace is gone
 *    (pruned) keeps its record.
 *
 * Steps 1 and 4 again after a `gap` frame on a reconnection (`afterGap`): the server no
 * longer held some events after the stream's last seq (it keeps a short tail of ended
 * runs), so the runs that ended meanwhile are read from their records and steps; those
 * the view saw end stay as they are.
 *
 * The state's pure functions (`runs/records.ts`) do the merging; this module only asks.
 */
import type { IChatDetail } from '../api/types';
import type { RunStep } from '../events';
import type { ChatState } from './state';

/** What hydration asks of the server (`IChatsService` has it). */
export interface IChatSource {
  getChat(id: string): Promise<IChatDetail>;
  listProposals(chatId: string): Promise<any[]>;
  runSteps(runId: string): Promise<RunStep[]>;
}

/** How many ended runs a view rebuilds from their steps when it opens (newest). */
export const STEP_RUNS = 20;

/** Reads a chat from the server into its `ChatState` (see the module comment). */
export class ChatHydration {
  constructor(
    private readonly source: IChatSource,
    private readonly state: ChatState
  ) {}

  /** Step 1: the chat and its turns (throws what the server answered). */
  async loadChat(): Promise<IChatDetail> {
    const chat = await this.source.getChat(this.state.chatId);
    this.state.loadTurns(chat.turns || [], chat.active_run_id ?? null);
    return chat;
  }

  /** Step 2, and again when a decision found the proposal decided elsewhere. */
  async loadProposals(): Promise<void> {
    try {
      this.state.loadProposals(await this.source.listProposals(this.state.chatId));
    } catch {
      // Older servers have no proposals; the turns' entries show what they can.
    }
  }

  /**
   * After a `gap` frame (`{type: 'gap', since, pruned_through}`, first on an events
   * WebSocket whose `since` is older than what the server kept) on a reconnection: the
   * turns read again, each run with a record that is not in `whole` (the runs the view saw
   * end, taken when the frame came) shown from it, then the steps of the newest
   * `STEP_RUNS` of those, newest first. Returns their ids. The chat's read is tried again
   * twice (`retryMs` apart, then twice that) before it throws what the server answered (a
   * run's steps that cannot be read keep its record).
   */
  async afterGap(
    whole: ReadonlySet<string>,
    stopped: () => boolean = () => false,
    retryMs = 1000
  ): Promise<string[]> {
    let chat: IChatDetail;
    for (let attempt = 1; ; attempt++) {
      try {
        chat = await this.source.getChat(this.state.chatId);
        break;
      } catch (err) {
        if (attempt >= 3 || stopped()) {
          throw err;
        }
        await new Promise(resolve => setTimeout(resolve, retryMs * attempt));
      }
    }
    const turns = chat.turns || [];
    this.state.loadTurns(turns, chat.active_run_id ?? null, whole);
    const rebuilt = turns.map(t => t.run_id).filter(id => !whole.has(id));
    await this.stepsOf(rebuilt.slice(-STEP_RUNS).reverse(), stopped);
    return rebuilt;
  }

  /**
   * Step 4: the newest `STEP_RUNS` ended runs from their steps, newest first; stops when
   * `stopped()` says the view is gone.
   */
  async loadSteps(stopped: () => boolean = () => false): Promise<void> {
    await this.stepsOf(this.state.runsToLoad().slice(-STEP_RUNS).reverse(), stopped);
  }

  private async stepsOf(runIds: string[], stopped: () => boolean): Promise<void> {
    for (const runId of runIds) {
      try {
        this.state.loadSteps(runId, await this.source.runSteps(runId));
      } catch {
        // The trace may be gone (pruned): the record still shows the turn.
      }
      if (stopped()) {
        return;
      }
    }
  }
}
