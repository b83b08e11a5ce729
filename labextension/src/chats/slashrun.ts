/**
 * What each slash command does (`slash.ts` reads them): run against the chat view's parts
 * it is given (`ISlashHost`), so the view stays small.
 */
import { errorText } from '../api/client';
import { IForkContext, slashFork } from './forks';
import { modelNote } from './modelnote';
import type { IChatsService } from './service';
import { slashHelp } from './slash';

/** What the commands act on. */
export interface ISlashHost {
  showNote: (text: string) => void;
  service: IChatsService;
  chatId: string;
  /** Whether a turn is running. */
  running: () => boolean;
  newChat?: () => Promise<unknown>;
  openMemory?: () => void;
  stop: (hard: boolean) => Promise<void>;
  exportChat: () => Promise<void>;
  forkContext: () => IForkContext;
}

/** Run the slash command `name` (a known one: `SLASH_COMMANDS`) with its argument. */
export async function runSlash(host: ISlashHost, name: string, arg = ''): Promise<void> {
  switch (name) {
    case 'fork': {
      const note = await slashFork(host.forkContext(), arg).catch(
        err => `Could not fork the chat: ${errorText(err)}`
      );
      if (note) {
        host.showNote(note);
      }
      return;
    }
    case 'new':
      await host.newChat?.();
      return;
    case 'stop':
    case 'stop!':
      if (!host.running()) {
        host.showNote('No turn is running: nothing to stop.');
        return;
      }
      await host.stop(name === 'stop!');
      return;
    case 'export':
      await host.exportChat();
      return;
    case 'memory':
      if (host.openMemory) {
        host.openMemory();
      } else {
        host.showNote('The memory view is not available here.');
      }
      return;
    case 'model':
      host.showNote(await modelNote(host.service, host.chatId, arg));
      return;
    default:
      host.showNote(slashHelp());
  }
}
