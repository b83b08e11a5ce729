/**
 * The gauge in a chat's header (`gauge.ts` makes what it shows): updated when a turn ends,
 * from the turn records the view holds, the last run's stats and the settings (read once
 * a minute at most). A read that fails leaves the gauge as it was.
 */
import type { AgentApi } from '../api/client';
import type { IRunState } from '../runs/state';
import type { ITurnRecord } from '../runs/turns';
import { gaugeOf, IStatsCall } from './gauge';

const SETTINGS_MS = 60_000;

/** The gauge element and its updates. */
export class ContextGauge {
  readonly node: HTMLSpanElement;

  constructor(private readonly api: AgentApi) {
    this.node = document.createElement('span');
    this.node.className = 'jp-agent-gauge';
    this.node.setAttribute('role', 'status');
    this.bar = document.createElement('span');
    this.bar.className = 'jp-agent-gauge-bar';
    this.label = document.createElement('span');
    this.label.className = 'jp-agent-gauge-text';
    this.node.append(this.bar, this.label);
    this.node.hidden = true;
  }

  /** Show the chat's gauge for these runs (a no-op until another turn ends). */
  update(runs: ReadonlyArray<IRunState>): void {
    const turns = runs.filter(r => r.turn && r.ended).map(r => r.turn as ITurnRecord);
    const last = turns[turns.length - 1];
    const key = `${turns.length}:${last?.run_id ?? ''}`;
    if (key === this.shown) {
      return;
    }
    this.shown = key;
    void this.render(turns, last);
  }

  private async render(turns: ITurnRecord[], last: ITurnRecord | undefined): Promise<void> {
    try {
      const [stats, settings] = await Promise.all([
        last ? this.api.runStats(last.run_id) : Promise.resolve(null),
        this.settings()
      ]);
      const tiers: { [name: string]: { model?: string } } = settings?.tiers ?? {};
      const tier = Object.entries(tiers).find(([, t]) => t.model === last?.model)?.[0];
      const profile = tier ? settings?.readiness?.[tier]?.profile : undefined;
      const gauge = gaugeOf({
        turns,
        calls: (stats?.calls as IStatsCall[] | undefined) ?? null,
        contextWindow: profile?.context_window ?? null,
        ceilings: settings?.ceilings ?? null
      });
      this.label.textContent = gauge.text;
      this.node.title = gauge.title;
      this.bar.style.setProperty('--jp-agent-gauge-fill', `${Math.round((gauge.ratio ?? 0) * 100)}%`);
      this.bar.hidden = gauge.ratio === null;
      this.node.hidden = turns.length === 0;
    } catch {
      this.shown = ''; // the next change tries again
    }
  }

  private async settings(): Promise<any> {
    if (!this.kept || Date.now() - this.kept.at > SETTINGS_MS) {
      this.kept = { at: Date.now(), value: await this.api.getSettings() };
    }
    return this.kept.value;
  }

  private readonly bar: HTMLSpanElement;
  private readonly label: HTMLSpanElement;
  private shown = '';
  private kept: { at: number; value: any } | null = null;
}
