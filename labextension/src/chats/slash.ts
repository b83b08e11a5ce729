/**
 * Slash commands of the composer (pure logic: no `@jupyterlab/*` or DOM import, so jest
 * tests it alone).
 *
 * A message that starts with `/` followed by a word is a command, never sent to the agent:
 * `parseSlash` tells a known command (with the rest of the line as its argument) from an
 * unknown one; `slashMatches` lists the commands a prefix being typed can complete to (the
 * composer's popup); `slashHelp` is what `/help` shows. A message that starts with `//` is
 * sent as written, less one `/` (a path or a comment the person means to send).
 */

/** One slash command: its name (without `/`), what it does, whether it takes an argument. */
export interface ISlashCommand {
  name: string;
  help: string;
  arg?: string;
}

/** Every slash command, in the order the popup and `/help` list them. */
export const SLASH_COMMANDS: readonly ISlashCommand[] = [
  { name: 'new', help: 'start a new chat' },
  { name: 'stop', help: 'stop the running turn at its next step' },
  { name: 'stop!', help: 'stop the running turn at once (hard stop)' },
  { name: 'export', help: 'export this chat as a notebook and open it' },
  { name: 'memory', help: 'open the agent’s memory' },
  {
    name: 'model',
    help: 'show the model that answers in this chat, or switch it (a tier or model name; default: the agent’s)',
    arg: '[NAME]'
  },
  { name: 'fork', help: 'a new chat holding this chat up to its last turn (or turn N)', arg: '[N]' },
  { name: 'help', help: 'list these commands' }
];

/** What a message is: a known command, an unknown one, or a message for the agent. */
export type SlashParse =
  | { kind: 'command'; command: ISlashCommand; arg: string }
  | { kind: 'unknown'; name: string }
  | { kind: 'message'; text: string };

const COMMAND = /^\/(\S+)(?:\s+([\s\S]*))?$/;

/** Read a message the person wrote (see the module comment). */
export function parseSlash(text: string): SlashParse {
  const trimmed = text.trim();
  if (trimmed.startsWith('//')) {
    return { kind: 'message', text: trimmed.slice(1) };
  }
  const match = COMMAND.exec(trimmed);
  if (!match) {
    return { kind: 'message', text: trimmed };
  }
  const name = match[1].toLowerCase();
  const command = SLASH_COMMANDS.find(c => c.name === name);
  if (!command) {
    return { kind: 'unknown', name };
  }
  return { kind: 'command', command, arg: (match[2] ?? '').trim() };
}

/**
 * The commands the box's text can complete to: while it is `/` and a partial name (no
 * space yet), the commands whose name starts with it; else none.
 */
export function slashMatches(text: string): ISlashCommand[] {
  const match = /^\/(\S*)$/.exec(text);
  if (!match || text.startsWith('//')) {
    return [];
  }
  const prefix = match[1].toLowerCase();
  return SLASH_COMMANDS.filter(c => c.name.startsWith(prefix));
}

/** What `/help` shows: one line per command. */
export function slashHelp(): string {
  return [
    'Commands (a message starting with // is sent with one / less):',
    ...SLASH_COMMANDS.map(c => `/${c.name}${c.arg ? ` ${c.arg}` : ''}: ${c.help}`)
  ].join('\n');
}

/** The line an unknown command gets (nothing is sent). */
export function unknownSlash(name: string): string {
  return `Unknown command /${name}: nothing was sent. /help lists the commands.`;
}
