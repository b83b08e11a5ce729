import { backoffMs } from '../../chats/stream';

describe('the event stream', () => {
  it('backs off from 0.25 s doubling up to 10 s', () => {
    const mid = () => 0.5;
    expect(backoffMs(0, mid)).toBe(250);
    expect(backoffMs(1, mid)).toBe(500);
    expect(backoffMs(10, mid)).toBe(10000);
    expect(backoffMs(3, () => 0)).toBe(1500);
    expect(backoffMs(3, () => 1)).toBe(2500);
  });
});
