/**
 * What `/model` says: the model that answers in a chat (its agent's codegen tier), or that
 * the demo model does.
 */
import { errorText } from '../api/client';
import type { IChatsService } from './service';

/** The line `/model` shows for the chat `chatId`. */
export async function modelNote(service: IChatsService, chatId: string): Promise<string> {
  const { api, status } = service;
  try {
    const [chat, agents] = await Promise.all([api.getChat(chatId), api.listAgents()]);
    const agent = agents.find(a => a.name === (chat.agent || 'agent')) ?? agents[0];
    const tier = agent?.tiers?.codegen;
    if (status?.demo) {
      return 'This chat is answered by the demo model (no model is configured): set one in Agent settings.';
    }
    return tier
      ? `This chat is answered by ${tier.model} (${tier.provider}, the codegen tier of the agent ${agent.name}). Change it in Agent settings.`
      : 'No codegen tier is configured: set one in Agent settings.';
  } catch (err) {
    return `Could not read the model: ${errorText(err)}`;
  }
}
