import { isExport } from '../../chats/exported';

describe('isExport', () => {
  it('knows an exported chat by its runs', () => {
    expect(isExport({ jupyter_agent: { chat_id: 'chat_1', runs: [{ run_id: 'run_1' }] } })).toBe(true);
    expect(isExport({ jupyter_agent: { chat_id: 'chat_1', runs: [] } })).toBe(false);
    expect(isExport({ jupyter_agent: { eval: {} } })).toBe(false);
    expect(isExport({ kernelspec: { name: 'python3' } })).toBe(false);
    expect(isExport(undefined)).toBe(false);
  });
});
