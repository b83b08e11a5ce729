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

  it('reads again after a gap on a reconnection, not on the first connection', async () => {
    const server = new Server(chat(['r1']));
    const state = new ChatState(CHAT);
    const hydration = new ChatHydration(server, state);
    await hydration.loadChat();
    await hydration.loadSteps();
    // The first connection's gap (since 0): the opening read covered it.
    expect(await hydration.afterGap({ type: 'gap', since: 0, pruned_through: 9 })).toBe(false);
    expect(server.asked).toEqual([`chat ${CHAT}`, 'steps r1']);
    // A run seen live, then the socket dropped; it and two more ended while away, the
    // server kept only the last one's end (its start pruned), and a fifth is running.
    state.applyEvent({ type: 'run_start', chat_id: CHAT, run_id: 'r2', seq: 12 });
    expect(state.run('r2')!.ended).toBe(false);
    const frame = { type: 'gap', since: 12, pruned_through: 30 };
    state.applyEvent({ type: 'run_end', chat_id: CHAT, run_id: 'r4', seq: 31 });
    state.applyEvent({ type: 'run_start', chat_id: CHAT, run_id: 'r5', seq: 32 });
    server.detail.turns = ['r1', 'r2', 'r3', 'r4'].map(id => turn(id));
    server.detail.active_run_id = 'r5';
    expect(await hydration.afterGap(frame)).toBe(true);
    expect(server.asked.slice(2)).toEqual([`chat ${CHAT}`, 'steps r4', 'steps r3', 'steps r2', 'steps r1']);
    // In order, each ended one whole from its record and steps; the running one live.
    expect(state.runs.map(r => [r.runId, r.ended])).toEqual([
      ['r1', true],
      ['r2', true],
      ['r3', true],
      ['r4', true],
      ['r5', false]
    ]);
    expect(state.activeRunId).toBe('r5');
    for (const id of ['r2', 'r3', 'r4']) {
      expect(state.run(id)!.reply).toMatchObject({ text: 'It is **2**.' });
      expect(state.run(id)!.items).toEqual([
        expect.objectContaining({ kind: 'bubble' }),
        expect.objectContaining({ kind: 'cell', cellId: 'c1' })
      ]);
    }
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
