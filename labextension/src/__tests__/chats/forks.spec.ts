jest.mock('@jupyterlab/apputils', () => ({
  InputDialog: { getText: jest.fn() }
}));

import { InputDialog } from '@jupyterlab/apputils';

import { forkFrom, originText, slashFork, turnNumber } from '../../chats/forks';
import type { IRunState } from '../../runs/state';

function run(runId: string, stored: boolean, userText = 'hi'): IRunState {
  return { runId, userText, turn: stored ? ({ run_id: runId } as any) : null } as IRunState;
}

describe('forks', () => {
  const runs = [run('r1', true, 'first'), run('r2', true, 'second'), run('r3', false)];

  it('numbers the stored turns from 1; a run with no stored turn has none', () => {
    expect(turnNumber(runs, 'r1')).toBe(1);
    expect(turnNumber(runs, 'r2')).toBe(2);
    expect(turnNumber(runs, 'r3')).toBeNull();
    expect(turnNumber(runs, 'nope')).toBeNull();
  });

  it('forks at the turn, or before it with the edited message', async () => {
    const forkChat = jest.fn().mockResolvedValue({ id: 'c2', title: 't' });
    const opened: string[] = [];
    const ctx = {
      api: { forkChat } as any,
      chatId: 'c1',
      runs,
      getView: () => ({ path: 'a.ipynb' }),
      openChat: async (c: { id: string }) => opened.push(c.id),
      notify: jest.fn()
    };
    await forkFrom(ctx, 'r2', false);
    expect(forkChat).toHaveBeenLastCalledWith('c1', 2);
    (InputDialog.getText as jest.Mock).mockResolvedValue({
      button: { accept: true },
      value: ' second, edited '
    });
    await forkFrom(ctx, 'r2', true);
    expect(forkChat).toHaveBeenLastCalledWith('c1', 1, {
      text: 'second, edited',
      view: { path: 'a.ipynb' }
    });
    expect(opened).toEqual(['c2', 'c2']);
    (InputDialog.getText as jest.Mock).mockResolvedValue({ button: { accept: false }, value: 'x' });
    await forkFrom(ctx, 'r1', true);
    expect(forkChat).toHaveBeenCalledTimes(2); // cancelled: nothing sent
    await forkFrom(ctx, 'r3', false);
    expect(forkChat).toHaveBeenCalledTimes(2); // not a stored turn: nothing to fork
  });

  it('forks at the last turn with /fork, at N with /fork N, and says why not', async () => {
    const forkChat = jest.fn().mockResolvedValue({ id: 'c3', title: 't' });
    const ctx = {
      api: { forkChat } as any,
      chatId: 'c1',
      runs,
      getView: () => null,
      openChat: async () => undefined,
      notify: () => undefined
    };
    expect(await slashFork(ctx, '')).toBeNull();
    expect(forkChat).toHaveBeenLastCalledWith('c1', 2);
    expect(await slashFork(ctx, '1')).toBeNull();
    expect(forkChat).toHaveBeenLastCalledWith('c1', 1);
    expect(await slashFork(ctx, '3')).toBe(
      '/fork takes a turn from 0 to 2 (none: the last one): nothing was made.'
    );
    expect(await slashFork({ ...ctx, runs: [] }, '')).toBe(
      'This chat has no turn yet: nothing to fork.'
    );
    expect(forkChat).toHaveBeenCalledTimes(2);
  });

  it('says where a fork came from', () => {
    expect(originText({ chat_id: 'c1', turn: 2 })).toBe(
      "Forked from c1 at turn 2: its turns up to there are this chat's first ones"
    );
    expect(originText({ chat_id: 'c1', turn: 0 }, 'plans')).toBe(
      'Forked from “plans”, before its first turn'
    );
  });
});
