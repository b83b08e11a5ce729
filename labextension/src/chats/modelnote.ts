/**
 * `/model`: what answers in a chat, and switching it. `/model` shows the chat's model (its
 * own, set with `/model NAME`, or its agent's codegen tier, or the demo model); `/model NAME`
 * makes the chat answer with NAME from its next turn (a tier name such as `classify`, or a
 * model of the codegen tier's provider, as the admin allows: `PATCH agent/chats/{id}`
 * `{model}`, which says why it refuses one); `/model default` goes back to the agent's.
 * `modelArg` and `modelLine` are pure (jest tests them alone).
 */
import { errorText } from '../api/client';
import type { IChatSummary } from '../api/types';
import type { IChatsService } from './service';

/** A tier as `GET agent/agents` shows it (what the line names). */
export interface ITierName {
  provider?: string;
  model?: string;
}

/** What `/model ARG` asks: show, or set the chat's model (null: back to the agent's). */
export type ModelAsk = { kind: 'show' } | { kind: 'set'; model: string | null };

const DEFAULTS = new Set(['default', 'reset', 'none']);

/** Read `/model`'s argument (see the module comment). */
export function modelArg(arg: string): ModelAsk {
  const name = arg.trim();
  if (!name) {
    return { kind: 'show' };
  }
  return { kind: 'set', model: DEFAULTS.has(name.toLowerCase()) ? null : name };
}

/**
 * The line `/model` shows: ``chat`` (its `model`), its agent's tiers by name, whether the
 * demo model answers.
 */
export function modelLine(
  chat: Pick<IChatSummary, 'model'>,
  agent: string,
  tiers: { [name: string]: ITierName | undefined },
  demo: boolean
): string {
  if (demo) {
    return 'This chat is answered by the demo model (no model is configured): set one in Agent settings.';
  }
  const codegen = tiers.codegen;
  const own = chat.model;
  if (own) {
    const tier = tiers[own];
    const what = tier?.model ? `${tier.model} (${tier.provider}, the ${own} tier)` : own;
    const back = codegen?.model ? ` to ${codegen.model}` : '';
    return `This chat answers with ${what}, its own choice. /model default goes back${back}, the agent’s.`;
  }
  return codegen?.model
    ? `This chat is answered by ${codegen.model} (${codegen.provider}, the codegen tier of the agent ${agent}). /model NAME switches this chat to a tier or a model.`
    : 'No codegen tier is configured: set one in Agent settings.';
}

/** What `/model ARG` shows for the chat `chatId` (after setting its model, if asked). */
export async function modelNote(
  service: IChatsService,
  chatId: string,
  arg = ''
): Promise<string> {
  const { api, status } = service;
  const ask = modelArg(arg);
  try {
    const chat =
      ask.kind === 'set' ? await api.setChatModel(chatId, ask.model) : await api.getChat(chatId);
    const agents = await api.listAgents();
    const agent = agents.find(a => a.name === (chat.agent || 'agent')) ?? agents[0];
    const line = modelLine(chat, agent?.name ?? 'agent', agent?.tiers ?? {}, !!status?.demo);
    return ask.kind === 'set' ? `From the next turn on: ${line}` : line;
  } catch (err) {
    return ask.kind === 'set'
      ? `The model was not changed: ${errorText(err)}`
      : `Could not read the model: ${errorText(err)}`;
  }
}
