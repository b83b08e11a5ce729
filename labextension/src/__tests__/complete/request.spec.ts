import { answerText, shouldAsk, splitAt } from '../../complete/request';

describe('inline completion requests', () => {
  it('splits the text at the cursor, capped', () => {
    expect(splitAt('total = \nprint(total)', 8)).toEqual({ prefix: 'total = ', suffix: '\nprint(total)' });
    expect(splitAt('abcdef', 3, 2)).toEqual({ prefix: 'bc', suffix: 'de' });
    expect(splitAt('abc', 99)).toEqual({ prefix: 'abc', suffix: '' });
  });

  it('asks while typing only with enough on the line and nothing after the cursor', () => {
    expect(shouldAsk('x = 1\ntotal = ', '', 3, false)).toBe(true);
    expect(shouldAsk('x = 1\nto', '', 3, false)).toBe(false);
    expect(shouldAsk('   \n', '', 0, false)).toBe(true);
    expect(shouldAsk('total = f(', ')\nmore', 3, false)).toBe(true);
    expect(shouldAsk('total = ', 'words after', 3, false)).toBe(false);
    expect(shouldAsk('', '', 3, true)).toBe(true);
  });

  it('reads the text to insert from the last NDJSON line', () => {
    const body = '\n\n{"delta": "```python"}\n{"text": "sum(values)", "model": "m"}\n';
    expect(answerText(body)).toBe('sum(values)');
    expect(answerText('{"text": ""}\n')).toBeNull();
    expect(answerText('\n\n')).toBeNull();
    expect(answerText('not json')).toBeNull();
  });
});
