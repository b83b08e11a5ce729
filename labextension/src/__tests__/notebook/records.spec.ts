import { isAgentNotebook } from '../../notebook/records';

describe('the agent’s own notebooks', () => {
  it('are a trace (run_id) or a chat export (chat_id), never the person’s notebook', () => {
    expect(isAgentNotebook({ run_id: 'run_01', chat_id: 'chat_01', program: 'toolcaller@v6' })).toBe(true);
    expect(isAgentNotebook({ chat_id: 'chat_01', title: 'Sales', runs: [] })).toBe(true);
    expect(isAgentNotebook(undefined)).toBe(false);
    expect(isAgentNotebook(null)).toBe(false);
    expect(isAgentNotebook({})).toBe(false);
    expect(isAgentNotebook(['run_id'])).toBe(false);
  });
});
