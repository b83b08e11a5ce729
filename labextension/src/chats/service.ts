/**
 * The chats service: the one object that lists, creates, renames and deletes chats, reads
 * a chat and its runs' steps, reads the server's status, opens a chat's event stream, and
 * sends the person's decisions (proposals: apply, discard, undo; approvals).
 *
 * Provided under the `IChatsService` token by the `jupyter-agent:chats` plugin; the
 * sidebar, the chat views, the commands and the settings plugins require it. Its signals
 * say when the chat list or the status changed, so views follow without callbacks.
 */
import { Token } from '@lumino/coreutils';
import { ISignal, Signal } from '@lumino/signaling';

import type { IAgentInfo } from '../agents/agents';
import type { AgentApi } from '../api/client';
import type {
  IAgentStatus,
  IChatDetail,
  IChatSummary,
  IProposalOutcome,
  IProposalRow,
  ISendResult,
  IView
} from '../api/types';
import type { RunStep } from '../events';
import { EventStream, IEventStreamOptions } from './stream';

/** What the panel asks of the server about chats (see the module comment). */
export interface IChatsService {
  /** The typed REST client (breaks, notebooks, settings). */
  readonly api: AgentApi;
  /** The last status read (null before the first). */
  readonly status: IAgentStatus | null;
  /** Emitted when the status was read again. */
  readonly statusChanged: ISignal<IChatsService, IAgentStatus>;
  /** Emitted when a chat was created, renamed, deleted or had activity. */
  readonly chatsChanged: ISignal<IChatsService, void>;
  refreshStatus(): Promise<IAgentStatus | null>;
  listChats(): Promise<IChatSummary[]>;
  /** A new chat of `agent` (absent: the server's default agent). */
  createChat(title?: string, agent?: string): Promise<IChatSummary>;
  /** The agents the server hosts (`GET agent/agents`; read once, then kept). */
  listAgents(): Promise<IAgentInfo[]>;
  renameChat(id: string, title: string): Promise<IChatSummary>;
  deleteChat(id: string): Promise<void>;
  getChat(id: string): Promise<IChatDetail>;
  /** A run's steps, whole (`GET agent/runs/{id}?full=1`). */
  runSteps(runId: string): Promise<RunStep[]>;
  send(id: string, text: string, view?: IView | null, attachments?: string[]): Promise<ISendResult>;
  /** Apply a proposal (all, or the edits of `cells`) or discard it. */
  decideProposal(
    runId: string,
    proposalId: string,
    apply: boolean,
    cells?: string[] | null
  ): Promise<IProposalOutcome>;
  /** Undo an applied proposal. */
  undoProposal(proposalId: string): Promise<IProposalOutcome>;
  /** A chat's proposals, whole (with their edits). */
  listProposals(chatId: string): Promise<IProposalRow[]>;
  /** Answer a run's wait for the person (approve or deny; the rest of the turn too). */
  answerApproval(runId: string, approvalId: string, approve: boolean, restOfTurn?: boolean): Promise<void>;
  /** A self-reconnecting event stream of one chat. */
  openEvents(chatId: string, options: Omit<IEventStreamOptions, 'url' | 'WebSocket'>): EventStream;
  /** Say a chat had activity (the list is read again). */
  notifyChanged(): void;
}

/** The token of the chats service. */
export const IChatsService = new Token<IChatsService>(
  'jupyter-agent:IChatsService',
  'The agent chats: list, create, read, send, and their live event streams.'
);

/** The chats service over the REST API. */
export class ChatsService implements IChatsService {
  constructor(readonly api: AgentApi) {}

  get status(): IAgentStatus | null {
    return this._status;
  }

  get statusChanged(): ISignal<IChatsService, IAgentStatus> {
    return this._statusChanged;
  }

  get chatsChanged(): ISignal<IChatsService, void> {
    return this._chatsChanged;
  }

  async refreshStatus(): Promise<IAgentStatus | null> {
    try {
      this._status = await this.api.status();
    } catch {
      return null;
    }
    this._statusChanged.emit(this._status);
    return this._status;
  }

  listChats(): Promise<IChatSummary[]> {
    return this.api.listChats();
  }

  async createChat(title?: string, agent?: string): Promise<IChatSummary> {
    const chat = await this.api.createChat(title, agent);
    this._chatsChanged.emit();
    return chat;
  }

  listAgents(): Promise<IAgentInfo[]> {
    // The agents change only with a server restart: one request per page load (a failed
    // one is asked again next time).
    if (!this._agents) {
      this._agents = this.api.listAgents().catch(error => {
        this._agents = null;
        throw error;
      });
    }
    return this._agents;
  }

  async renameChat(id: string, title: string): Promise<IChatSummary> {
    const chat = await this.api.renameChat(id, title);
    this._chatsChanged.emit();
    return chat;
  }

  async deleteChat(id: string): Promise<void> {
    await this.api.deleteChat(id);
    this._chatsChanged.emit();
  }

  getChat(id: string): Promise<IChatDetail> {
    return this.api.getChat(id);
  }

  async runSteps(runId: string): Promise<RunStep[]> {
    const detail = await this.api.runDetail(runId, true);
    return Array.isArray(detail.steps) ? detail.steps : [];
  }

  send(id: string, text: string, view?: IView | null, attachments?: string[]): Promise<ISendResult> {
    return this.api.send(id, text, view, attachments);
  }

  decideProposal(
    runId: string,
    proposalId: string,
    apply: boolean,
    cells?: string[] | null
  ): Promise<IProposalOutcome> {
    return this.api.decideProposal(runId, proposalId, apply, cells);
  }

  async undoProposal(proposalId: string): Promise<IProposalOutcome> {
    return this.api.undoProposal(proposalId);
  }

  listProposals(chatId: string): Promise<IProposalRow[]> {
    return this.api.listProposals(chatId);
  }

  async answerApproval(
    runId: string,
    approvalId: string,
    approve: boolean,
    restOfTurn = false
  ): Promise<void> {
    await this.api.answerApproval(runId, approvalId, approve, restOfTurn);
  }

  openEvents(chatId: string, options: Omit<IEventStreamOptions, 'url' | 'WebSocket'>): EventStream {
    return new EventStream({
      ...options,
      url: since => this.api.eventsUrl(chatId, since),
      WebSocket: this.api.settings.WebSocket
    });
  }

  notifyChanged(): void {
    this._chatsChanged.emit();
  }

  private _status: IAgentStatus | null = null;
  private _agents: Promise<IAgentInfo[]> | null = null;
  private readonly _statusChanged = new Signal<IChatsService, IAgentStatus>(this);
  private readonly _chatsChanged = new Signal<IChatsService, void>(this);
}
