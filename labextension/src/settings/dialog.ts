/**
 * The settings dialog: the model tiers (provider, model, key reference, base URL), each
 * with its readiness on the server (ready, key set, why not).
 *
 * Only choices the admin allows are offered (`GET agent/settings`; see tierchoices.ts):
 * the allowed key references, and for the chosen key only the URLs it is bound to; a
 * keyless tier may also type a loopback URL when the admin allows it. A key's value never
 * enters the browser: the person picks a reference such as `env:ANTHROPIC_API_KEY`.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import type { AgentApi } from '../api/client';
import type { IAgentSettings, IModelProfile, ITierSettings } from '../api/types';
import {
  boundUrl,
  effectiveUrl,
  keyChoices,
  mayTypeLoopback,
  profileFields,
  profileText,
  readinessText,
  urlChoices
} from './tierchoices';

const TIER_NAMES = ['codegen', 'classify', 'vision', 'complete'];
const PROVIDERS = ['anthropic', 'openai', 'openai-compatible'];

/** The form body of the dialog; `value` reads the tiers back. */
class SettingsForm extends Widget {
  constructor(private readonly settings: IAgentSettings) {
    super();
    this.addClass('jp-agent-settings');
    const note = document.createElement('p');
    note.textContent =
      'Choose the model of each tier. Keys are named by reference (set the key itself ' +
      'in the server’s environment); tiers left empty fall back to codegen (complete, for inline ' +
      'completion: to classify, then codegen).';
    this.node.appendChild(note);
    for (const name of TIER_NAMES) {
      this.node.appendChild(this.tierRow(name, settings.tiers?.[name]));
    }
  }

  private select(label: string, name: string, options: string[], value: string, allowEmpty: boolean): HTMLLabelElement {
    const l = document.createElement('label');
    l.textContent = label;
    const s = document.createElement('select');
    s.name = name;
    const all = [...(allowEmpty ? [''] : []), ...options];
    if (value && !all.includes(value)) {
      all.push(value);
    }
    for (const o of all) {
      const opt = document.createElement('option');
      opt.value = o;
      opt.textContent = o || '(none)';
      opt.selected = o === value;
      s.appendChild(opt);
    }
    l.appendChild(s);
    return l;
  }

  private tierRow(name: string, tier: ITierSettings | undefined): HTMLFieldSetElement {
    const fs = document.createElement('fieldset');
    fs.dataset.tier = name;
    const legend = document.createElement('legend');
    legend.textContent = name;
    fs.appendChild(legend);
    const providers = [...PROVIDERS, ...(this.settings.providers || [])].filter((p, i, a) => a.indexOf(p) === i);
    fs.appendChild(this.select('Provider', 'provider', providers, tier?.provider ?? '', name !== 'codegen'));
    const ml = document.createElement('label');
    ml.textContent = 'Model';
    const model = document.createElement('input');
    model.name = 'model';
    model.value = tier?.model ?? '';
    model.placeholder = 'e.g. claude-sonnet-4-5';
    ml.appendChild(model);
    fs.appendChild(ml);
    const keyLabel = this.select('Key reference', 'api_key_ref', keyChoices(this.settings), tier?.api_key_ref ?? '', true);
    fs.appendChild(keyLabel);
    const urlSlot = document.createElement('label');
    urlSlot.className = 'jp-agent-base-url';
    fs.appendChild(urlSlot);
    const keySelect = keyLabel.querySelector('select')!;
    const renderUrl = (current: string, keyChanged: boolean): void =>
      this.renderBaseUrl(urlSlot, name, keySelect.value || null, current, keyChanged, () =>
        (fs.querySelector('[name="provider"]') as HTMLSelectElement | null)?.value ?? ''
      );
    renderUrl(tier?.base_url ?? '', false);
    keySelect.addEventListener('change', () => {
      const now = (urlSlot.querySelector('[name="base_url"]') as HTMLInputElement | null)?.value ?? '';
      renderUrl(now, true);
    });
    const readiness = this.settings.readiness?.[name];
    if (readiness) {
      const line = document.createElement('div');
      line.className = 'jp-agent-tier-readiness';
      line.dataset.ready = String(readiness.ready);
      line.setAttribute('role', 'status');
      line.textContent = readinessText(readiness, tier?.api_key_ref || null, tier?.provider ?? (name === 'codegen' ? 'set' : ''));
      fs.appendChild(line);
    }
    if (readiness?.profile) {
      fs.appendChild(this.profileRow(tier, readiness.profile));
    }
    return fs;
  }

  /** What runs assume of the tier's model, and the fields the person may set. */
  private profileRow(tier: ITierSettings | undefined, assumed: IModelProfile): HTMLDivElement {
    const row = document.createElement('div');
    row.className = 'jp-agent-profile';
    const line = document.createElement('div');
    line.className = 'jp-agent-profile-line';
    line.dataset.assumed = String(assumed.assumed);
    line.textContent = profileText(assumed);
    row.appendChild(line);
    const said = tier?.profile ?? {};
    const number = (label: string, field: 'context_window' | 'max_output'): HTMLLabelElement => {
      const l = document.createElement('label');
      l.textContent = label;
      const input = document.createElement('input');
      input.type = 'number';
      input.name = `profile_${field}`;
      input.value = said[field] !== undefined ? String(said[field]) : '';
      input.placeholder = String(assumed[field]);
      l.appendChild(input);
      return l;
    };
    row.append(number('Context window (tokens)', 'context_window'), number('Output cap (tokens)', 'max_output'));
    row.appendChild(this.select('Tool mode', 'profile_tool_mode', ['native', 'fenced', 'xml'], said.tool_mode ?? '', true));
    return row;
  }

  /**
   * The base URL control for key reference `ref`: a choice among the URLs the key is
   * bound to; a keyless tier may also type a loopback URL (when allowed), with the
   * allowed URLs as suggestions. `current` stays selected, except after the key changed
   * to one it is not bound to (the tier as configured is shown as it is, so an
   * unchanged tier is not sent back).
   */
  private renderBaseUrl(
    slot: HTMLLabelElement,
    tierName: string,
    ref: string | null,
    current: string,
    keyChanged: boolean,
    provider: () => string
  ): void {
    slot.textContent = 'Base URL';
    const urls = urlChoices(this.settings, ref);
    if (mayTypeLoopback(this.settings, ref)) {
      const input = document.createElement('input');
      input.name = 'base_url';
      input.value = current;
      input.placeholder = 'http://127.0.0.1:8000/v1';
      input.title = 'One of the suggested URLs, or a loopback server of your own';
      const list = document.createElement('datalist');
      list.id = `jp-agent-base-urls-${tierName}`;
      for (const url of urls) {
        const opt = document.createElement('option');
        opt.value = url;
        list.appendChild(opt);
      }
      input.setAttribute('list', list.id);
      slot.append(input, list);
      return;
    }
    // A key goes only where it is bound: no free text, and the first bound URL by default.
    const value = ref ? boundUrl(urls, current, keyChanged, provider()) : current;
    const select = this.select('', 'base_url', urls, value, !ref).querySelector('select')!;
    slot.appendChild(select);
  }

  get value(): { [name: string]: ITierSettings } {
    const tiers: { [name: string]: ITierSettings } = {};
    this.node.querySelectorAll('fieldset').forEach(fs => {
      const get = (n: string): string =>
        ((fs.querySelector(`[name="${n}"]`) as HTMLInputElement | null)?.value ?? '').trim();
      const provider = get('provider');
      const model = get('model');
      if (!provider || !model) {
        return;
      }
      const tier: ITierSettings = { provider, model };
      const api = this.settings.tiers?.[fs.dataset.tier!]?.api;
      if (api && provider.startsWith('openai')) {
        tier.api = api;
      }
      const base = get('base_url');
      const ref = get('api_key_ref');
      if (base) {
        tier.base_url = base;
      } else {
        delete tier.base_url;
      }
      if (ref) {
        tier.api_key_ref = ref;
      } else {
        delete tier.api_key_ref;
      }
      const profile = profileFields({
        context_window: get('profile_context_window'),
        max_output: get('profile_max_output'),
        tool_mode: get('profile_tool_mode')
      });
      if (profile) {
        tier.profile = profile;
      }
      // Only what the person changed: the admin's tiers may use values outside the
      // allow-lists, which the server would (rightly) refuse from the browser.
      const before = this.settings.tiers?.[fs.dataset.tier!];
      const same = (a: ITierSettings | undefined, b: ITierSettings): boolean =>
        !!a &&
        a.provider === b.provider &&
        a.model === b.model &&
        effectiveUrl(a) === effectiveUrl(b) &&
        (a.api_key_ref ?? '') === (b.api_key_ref ?? '') &&
        JSON.stringify(a.profile ?? {}) === JSON.stringify(b.profile ?? {});
      if (!same(before, tier)) {
        tiers[fs.dataset.tier!] = tier;
      }
    });
    return tiers;
  }
}

/** Show the settings dialog; save with `PUT agent/settings`. True when saved. */
export async function openSettings(api: AgentApi): Promise<boolean> {
  let settings: IAgentSettings;
  try {
    settings = await api.getSettings();
  } catch (err) {
    await showDialog({
      title: 'Agent settings',
      body: `The settings could not be read: ${err instanceof Error ? err.message : String(err)}`,
      buttons: [Dialog.okButton()]
    });
    return false;
  }
  const form = new SettingsForm(settings);
  const result = await showDialog({
    title: 'Agent settings',
    body: form,
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Save' })]
  });
  if (!result.button.accept) {
    return false;
  }
  try {
    await api.putSettings({ tiers: form.value });
    return true;
  } catch (err) {
    await showDialog({
      title: 'Agent settings',
      body: `The settings were not saved: ${err instanceof Error ? err.message : String(err)}`,
      buttons: [Dialog.okButton()]
    });
    return false;
  }
}
