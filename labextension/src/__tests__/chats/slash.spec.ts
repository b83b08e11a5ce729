import {
  SLASH_COMMANDS,
  parseSlash,
  slashHelp,
  slashMatches,
  unknownSlash
} from '../../chats/slash';

describe('slash commands', () => {
  it('reads a known command, with the rest of the line as its argument', () => {
    const parsed = parseSlash('  /Model  gpt-4o ');
    expect(parsed).toMatchObject({ kind: 'command', arg: 'gpt-4o' });
    expect(parsed.kind === 'command' && parsed.command.name).toBe('model');
    const hard = parseSlash('/stop!');
    expect(hard).toMatchObject({ kind: 'command', arg: '' });
    expect(hard.kind === 'command' && hard.command.name).toBe('stop!');
  });

  it('tells an unknown command from a message', () => {
    expect(parseSlash('/fly to the moon')).toEqual({ kind: 'unknown', name: 'fly' });
    expect(parseSlash('plot /tmp/x.csv')).toEqual({ kind: 'message', text: 'plot /tmp/x.csv' });
    expect(parseSlash('/')).toEqual({ kind: 'message', text: '/' });
    expect(unknownSlash('fly')).toContain('nothing was sent');
  });

  it('sends a message that starts with // with one / less', () => {
    expect(parseSlash('//tmp/data.csv is my file')).toEqual({
      kind: 'message',
      text: '/tmp/data.csv is my file'
    });
    expect(slashMatches('//')).toEqual([]);
  });

  it('lists what a prefix completes to, and nothing once a space is typed', () => {
    expect(slashMatches('/').map(c => c.name)).toEqual(SLASH_COMMANDS.map(c => c.name));
    expect(slashMatches('/st').map(c => c.name)).toEqual(['stop', 'stop!']);
    expect(slashMatches('/STO').map(c => c.name)).toEqual(['stop', 'stop!']);
    expect(slashMatches('/stop now')).toEqual([]);
    expect(slashMatches('hello')).toEqual([]);
    expect(slashMatches('/zz')).toEqual([]);
  });

  it('helps with every command', () => {
    const help = slashHelp();
    for (const command of SLASH_COMMANDS) {
      const arg = command.arg ? ` ${command.arg}` : '';
      expect(help).toContain(`/${command.name}${arg}: ${command.help}`);
    }
  });
});
