/**
 * The agent's inline completion provider (JupyterLab's `IInlineCompletionProvider`, 4.1 and
 * later: ghost text, Tab accepts, JupyterLab's own inline completer settings apply) for
 * notebooks and files. Each request goes to `POST agent/complete` with the text around the
 * cursor (`request.ts`); a new request aborts the one before (the person typed on: the
 * server closes the model's stream). With no model for completions (only the demo model)
 * it says why once and stays silent for a minute at a time (until a model is set).
 */
import { Notification } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import type {
  CompletionHandler,
  IInlineCompletionContext,
  IInlineCompletionList,
  IInlineCompletionProvider
} from '@jupyterlab/completer';
import { ServerConnection } from '@jupyterlab/services';
import type { ISettingRegistry } from '@jupyterlab/settingregistry';

import { answerText, shouldAsk, splitAt } from './request';

/** The provider's settings (JupyterLab's inline completer settings, under its identifier). */
interface ISettings {
  minPrefix: number;
}

export class AgentInlineProvider implements IInlineCompletionProvider {
  readonly name = 'jupyter-agent';
  readonly identifier = 'jupyter-agent';
  readonly schema: ISettingRegistry.IProperty = {
    default: { enabled: true, debouncerDelay: 300, timeout: 15000, minPrefix: 3 },
    properties: {
      minPrefix: {
        title: 'Minimum prefix',
        description: 'Characters on the cursor’s line before the agent suggests while you type.',
        type: 'number',
        minimum: 0
      }
    }
  };

  constructor(private readonly settings: ServerConnection.ISettings) {}

  configure(settings: { [key: string]: any }): void {
    if (typeof settings.minPrefix === 'number') {
      this.options.minPrefix = settings.minPrefix;
    }
  }

  async fetch(
    request: CompletionHandler.IRequest,
    context: IInlineCompletionContext
  ): Promise<IInlineCompletionList> {
    this.controller?.abort();
    const { prefix, suffix } = splitAt(request.text, request.offset);
    const explicit = Number(context.triggerKind) === 1; // InlineCompletionTriggerKind.Invoke
    const quiet = this.silentUntil > Date.now();
    if (quiet || !shouldAsk(prefix, suffix, this.options.minPrefix, explicit)) {
      return { items: [] };
    }
    const widget = context.widget as any;
    const path: string = widget?.context?.path ?? '';
    const cellId: string | undefined = widget?.content?.activeCell?.model?.id;
    const controller = (this.controller = new AbortController());
    const url = URLExt.join(this.settings.baseUrl, 'agent', 'complete');
    const body = { path, cell_id: cellId, prefix, suffix, language: languageOf(request.mimeType) };
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(
        url,
        { method: 'POST', body: JSON.stringify(body), signal: controller.signal },
        this.settings
      );
    } catch {
      return { items: [] }; // aborted (the person typed on) or the server is away
    }
    if (response.status === 409) {
      // No model for completions: said once, asked again a minute later (a model set).
      this.silentUntil = Date.now() + 60_000;
      const said = await response.json().catch(() => ({}));
      if (!this.told) {
        this.told = true;
        Notification.info(`Agent completions are off: ${said.message ?? 'no model for them'}.`, {
          autoClose: 8000
        });
      }
      return { items: [] };
    }
    if (!response.ok) {
      return { items: [] }; // over the rate, a bad request: nothing to suggest
    }
    const raw = await response.text().catch(() => ''); // aborted while read: nothing
    const text = answerText(raw);
    return { items: text ? [{ insertText: text }] : [] };
  }

  private controller: AbortController | null = null;
  private silentUntil = 0;
  private told = false;
  private readonly options: ISettings = { minPrefix: 3 };
}

function languageOf(mimeType: string | undefined): string {
  const found = /x-(?:i?)([a-z0-9+#-]+)/.exec(mimeType ?? '');
  return found ? found[1].replace(/^python\d*$/, 'python') : 'python';
}
