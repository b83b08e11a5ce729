/**
 * The live event stream of one chat: a WebSocket to `agent/chats/{id}/events?since=SEQ`
 * that reconnects by itself with backoff and catches up from the last seq applied.
 *
 * No `@jupyterlab/*` import: the URL and the WebSocket class are given, so the backoff
 * logic is testable alone.
 */
import type { IAgentEvent } from '../runs/state';

/** The delay before reconnect attempt `attempt` (0-based): 0.25 s doubling to 10 s, jittered. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(10000, 250 * Math.pow(2, Math.max(0, attempt)));
  return Math.round(base * (0.75 + 0.5 * random()));
}

/** Connection states shown to the person. */
export type StreamState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface IEventStreamOptions {
  /** The WebSocket URL for a given `since`. */
  url: (since: number) => string;
  /** The seq to catch up from at each (re)connection. */
  since: () => number;
  /** Called with every event received (already parsed). */
  onEvent: (event: IAgentEvent) => void;
  /** Called when the state changes. */
  onState?: (state: StreamState) => void;
  /** The WebSocket class (JupyterLab's `ServerConnection.ISettings.WebSocket`). */
  WebSocket?: typeof WebSocket;
}

/** A self-reconnecting event stream; `dispose()` closes it for good. */
export class EventStream {
  constructor(private readonly options: IEventStreamOptions) {
    this.connect();
  }

  get state(): StreamState {
    return this._state;
  }

  /** Reconnect at once (e.g. after the browser came back online). */
  reconnectNow(): void {
    if (this._disposed) {
      return;
    }
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
    if (this._ws === null) {
      this.connect();
    }
  }

  dispose(): void {
    this._disposed = true;
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    const ws = this._ws;
    this._ws = null;
    if (ws) {
      ws.onclose = null;
      ws.onmessage = null;
      ws.onerror = null;
      ws.close();
    }
    this.setState('closed');
  }

  private connect(): void {
    const Ctor = this.options.WebSocket ?? WebSocket;
    this.setState(this._attempt === 0 ? 'connecting' : 'reconnecting');
    const ws = new Ctor(this.options.url(this.options.since()));
    this._ws = ws;
    ws.onopen = () => {
      this._attempt = 0;
      this.setState('open');
    };
    ws.onmessage = (msg: MessageEvent) => {
      let data: any;
      try {
        data = JSON.parse(String(msg.data));
      } catch {
        return;
      }
      for (const event of Array.isArray(data) ? data : [data]) {
        if (event && typeof event === 'object' && typeof event.type === 'string') {
          this.options.onEvent(event as IAgentEvent);
        }
      }
    };
    ws.onerror = () => {
      // onclose follows and schedules the reconnection.
    };
    ws.onclose = () => {
      if (this._ws !== ws) {
        return;
      }
      this._ws = null;
      if (this._disposed) {
        return;
      }
      this.setState('reconnecting');
      const delay = backoffMs(this._attempt++);
      this._timer = setTimeout(() => {
        this._timer = null;
        this.connect();
      }, delay);
    };
  }

  private setState(state: StreamState): void {
    if (state !== this._state) {
      this._state = state;
      this.options.onState?.(state);
    }
  }

  private _ws: WebSocket | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _attempt = 0;
  private _disposed = false;
  private _state: StreamState = 'closed';
}
