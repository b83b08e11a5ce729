/**
 * The REST hydration of a chat, against a stand-in server answering as the routes do:
 * the turns first, then the proposals (placed before the steps, which keep them), then
 * the newest ended runs' steps, newest first; a pruned trace keeps its record.
 */
import { ChatHydration, IChatSource, STEP_RUNS } from '../../chats/hydration';
import { ChatState } from '../../chats/state';
import type { IChatDetail } from '../../api/types';
import type { RunStep } from '../../events';
import { CHAT, runSteps, turn } from '../runs/fixtures';

/** A stand-in server: `GET agent/chats/{id}`, `GET agent/proposals`, `GET agent/runs/{id}`. */
class Server implements IChatSource {
  constructor(readonly detail: IChatDetail) {}
  asked: string[] = [];
  pruned = new Set<string>();

  async getChat(id: string): Promise<IChatDetail> {
    this.asked.push(`chat ${id}`);
    return this.detail;
  }

  async listProposals(chatId: string): Promise<any[]> {
    this.asked.push(`proposals ${chatId}`);
    return [
      { id: 'p1', chat_id: CHAT, run_id: 'r1', cell_id: 'c1', path: 'a.ipynb', edits: '[]', status: 'applied', applied: '[]' }
    ];
  }

  async runSteps(runId: string): Promise<RunStep[]> {
    this.asked.push(`steps ${runId}`);
    if (this.pruned.has(runId)) {
      throw new Error('404: no trace');
    }
    return runSteps();
  }
}

function chat(runIds: string[], active: string | null = null): IChatDetail {
  return {
    id: CHAT,
    title: 'A chat',
    created: 'x',
    updated: 'x',
    active_run_id: active,
    turns: runIds.map(id => turn(id))
  };
}

describe('ChatHydration', () => {
  it('reads the turns, the proposals, then the steps newest first', async () => {
    const server = new Server(chat(['r0', 'r1'], 'r2'));
    server.pruned.add('r0');
    const state = new ChatState(CHAT);
    const hydration = new ChatHydration(server, state);
    expect((await hydration.loadChat()).title).toBe('A chat');
    expect(state.runs.map(r => r.source)).toEqual(['record', 'record', 'events']);
    expect(state.activeRunId).toBe('r2');
    await hydration.loadProposals();
    await hydration.loadSteps();
    expect(server.asked).toEqual([`chat ${CHAT}`, `proposals ${CHAT}`, 'steps r1', 'steps r0']);
    // r1 from its steps, its proposal after the cell that made it; r0 (pruned) from its record.
    expect(state.run('r1')!.items).toEqual([
      expect.objectContaining({ kind: 'bubble' }),
      expect.objectContaining({ kind: 'cell', cellId: 'c1' }),
      { kind: 'proposal', proposalId: 'p1' }
    ]);
    expect(state.proposal('p1')).toMatchObject({ status: 'applied', runId: 'r1' });
    expect(state.run('r0')!.source).toBe('record');
    expect(state.runsToLoad()).toEqual(['r0']);
  });

  it('rebuilds only the newest runs, and stops when the view is gone', async () => {
    const ids = Array.from({ length: STEP_RUNS + 3 }, (_, i) => `r${i}`);
    const server = new Server(chat(ids));
    const hydration = new ChatHydration(server, new ChatState(CHAT));
    await hydration.loadChat();
    await hydration.loadSteps();
    const stepped = server.asked.filter(a => a.startsWith('steps'));
    expect(stepped).toHaveLength(STEP_RUNS);
    expect(stepped[0]).toBe(`steps r${STEP_RUNS + 2}`);

    const gone = new Server(chat(ids));
    const early = new ChatHydration(gone, new ChatState(CHAT));
    await early.loadChat();
    await early.loadSteps(() => true);
    expect(gone.asked.filter(a => a.startsWith('steps'))).toHaveLength(1);
  });

  it('after a gap, shows again from records only the runs it did not see end', async () => {
    const server = new Server(chat(['r1']));
    const state = new ChatState(CHAT);
    const hydration = new ChatHydration(server, state);
    await hydration.loadChat();
    await hydration.loadProposals();
    await hydration.loadSteps();
    const r1 = state.run('r1');
    // r2 seen live (its cell proposing p2), then the socket dropped. While away r2, r3 and
    // r4 ended and r5 started; the server kept r4's end (its start let go) and r5's start.
    const live = (type: string, run_id: string, seq: number, fields: object = {}) =>
      state.applyEvent({ type, chat_id: CHAT, run_id, seq, ...fields });
    live('run_start', 'r2', 12, { started: 'x', text: 'tidy it', message_id: 'm0' });
    live('cell_start', 'r2', 13, { cell_id: 'c1', kind: 'python', code: 'propose()' });
    live('proposal', 'r2', 14, { proposal_id: 'p2', path: 'b.ipynb', edits: [] });
    const whole = state.endedRunIds(); // when the gap frame comes
    expect([...whole]).toEqual(['r1']);
    live('run_end', 'r4', 31, { stop_reason: 'done', end_cause: 'done' });
    live('run_start', 'r5', 32, { started: 'x', text: 'more', message_id: 'm9' });
    const p2 = { proposal_id: 'p2', path: 'b.ipynb', status: 'pending', applied: [] };
    server.detail.turns = [turn('r1'), turn('r2', { proposals: [p2] }), turn('r3'), turn('r4')];
    server.detail.active_run_id = 'r5';
    const reading = hydration.afterGap(whole);
    // r6 starts and ends while the chat is read (no record of it in that answer).
    live('run_start', 'r6', 40, { started: 'x', text: 'quick', message_id: 'm10' });
    expect(await reading).toEqual(['r2', 'r3', 'r4']);
    expect(server.asked.slice(3)).toEqual([`chat ${CHAT}`, 'steps r4', 'steps r3', 'steps r2']);
    expect(state.runs.map(r => r.runId)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    expect(state.run('r1')).toEqual(r1); // seen whole: as it was, not read again
    for (const id of ['r2', 'r3', 'r4']) {
      expect(state.run(id)!.ended).toBe(true);
      expect(state.run(id)!.reply).toMatchObject({ text: 'It is **2**.' });
    }
    // r2's proposal is back in its run, after the cell that made it.
    expect(state.run('r2')!.items.map(i => i.kind)).toEqual(['bubble', 'cell', 'proposal']);
    expect(state.activeRunId).toBe('r5');
  });

  it('tries the chat read again after a gap, then says what the server answered', async () => {
    const server = new Server(chat(['r1']));
    const hydration = new ChatHydration(server, new ChatState(CHAT));
    const read = server.getChat.bind(server);
    let failures = 2;
    server.getChat = async id => {
      if (failures-- > 0) {
        throw new Error('503: restarting');
      }
      return read(id);
    };
    expect(await hydration.afterGap(new Set(), () => false, 1)).toEqual(['r1']);
    failures = 3;
    await expect(hydration.afterGap(new Set(), () => false, 1)).rejects.toThrow('503: restarting');
  });

  it('shows the turns when the server has no proposals route', async () => {
    const server = new Server(chat(['r1']));
    server.listProposals = async () => {
      throw new Error('404');
    };
    const state = new ChatState(CHAT);
    const hydration = new ChatHydration(server, state);
    await hydration.loadChat();
    await expect(hydration.loadProposals()).resolves.toBeUndefined();
    expect(state.runs).toHaveLength(1);
  });
});
