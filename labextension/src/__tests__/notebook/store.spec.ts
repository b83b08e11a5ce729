/**
 * The proposal store: each proposal kept once, a change replacing its item, and one
 * `changed` emission per real change, carrying the proposal now and before.
 */
import { ChatState } from '../../chats/state';
import { proposalFromEvent } from '../../notebook/proposals';
import { IProposalChange, ProposalStore } from '../../notebook/store';
import { CHAT, ev, resetSeq } from '../runs/fixtures';

const EDITS = [
  { op: 'replace', cell_id: 'a1', source: 'x = 2', old_source: 'x = 1', reason: 'r', diff: '-x = 1\n+x = 2\n' },
  { op: 'delete', cell_id: 'b2', old_source: 'junk', reason: 'r', diff: '-junk\n' }
];

function recorded(store: ProposalStore): IProposalChange[] {
  const changes: IProposalChange[] = [];
  store.changed.connect((_, change) => changes.push(change));
  return changes;
}

beforeEach(() => {
  resetSeq();
});

describe('ProposalStore', () => {
  it('says what changed: added, then updated with the item before', () => {
    const store = new ProposalStore();
    const changes = recorded(store);
    const item = proposalFromEvent({ proposal_id: 'p1', run_id: 'r', path: 'a.ipynb', edits: EDITS }, 'c1');
    expect(store.add(item)).toBe(true);
    expect(store.add(item)).toBe(false); // kept once
    expect(store.request('p1', true)).toBe(true);
    expect(store.outcome('p1', 'applied')).toBe(true);
    expect(changes.map(c => c.type)).toEqual(['added', 'updated', 'updated']);
    expect(changes[0]).toEqual({ type: 'added', proposal: item, previous: null });
    expect(changes[2].previous).toBe(changes[1].proposal);
    expect(changes[2].proposal).toMatchObject({ status: 'applied', applied: ['a1', 'b2'], busy: false });
    expect(store.get('p1')).toBe(changes[2].proposal);
    expect(item).toMatchObject({ status: 'pending', busy: false }); // items are values
  });

  it('emits nothing when nothing changed, or for a proposal it does not hold', () => {
    const store = new ProposalStore();
    store.add(proposalFromEvent({ proposal_id: 'p1', run_id: 'r', path: 'a.ipynb', edits: EDITS }, null));
    store.outcome('p1', 'partly', ['b2']);
    const changes = recorded(store);
    expect(store.outcome('p1', 'partly', ['b2'])).toBe(false);
    expect(store.request('p1', false, null)).toBe(false);
    expect(store.merge({ ...store.get('p1')! })).toBe(false);
    expect(store.outcome('nope', 'applied')).toBe(false);
    expect(changes).toEqual([]);
  });

  it('keeps a conflict’s words from the answer when its event comes after', () => {
    const store = new ProposalStore();
    store.add(proposalFromEvent({ proposal_id: 'p1', run_id: 'r', path: 'a.ipynb', edits: EDITS }, null));
    store.outcome('p1', 'conflict', null, 'cell a1 changed');
    expect(store.outcome('p1', 'conflict')).toBe(false);
    expect(store.get('p1')!.error).toBe('cell a1 changed');
  });
});

describe('ChatState and its proposal store', () => {
  it('keeps each proposal once (the run names it) and emits changed once per call', () => {
    const s = new ChatState(CHAT);
    const changes = recorded(s.proposals);
    let count = 0;
    s.changed.connect(() => (count += 1));
    s.applyEvent(ev('run_start', 'r', { text: 'go' }));
    s.applyEvent(ev('cell_start', 'r', { cell_id: 'c1', kind: 'python', code: 'propose()' }));
    s.applyEvent(ev('proposal', 'r', { proposal_id: 'p1', path: 'a.ipynb', edits: EDITS }));
    expect(count).toBe(3);
    expect(s.run('r')!.items[1]).toEqual({ kind: 'proposal', proposalId: 'p1' });
    expect(s.proposals.all()).toHaveLength(1);
    expect(changes.map(c => [c.type, c.proposal.agentCellId])).toEqual([['added', 'c1']]);
    s.setProposalBusy('p1', true);
    s.setProposalBusy('p1', true); // no change: no emission
    expect(count).toBe(4);
    expect(s.applyEvent(ev('proposal_end', 'r', { proposal_id: 'p1', outcome: 'discarded' }))).toBe(true);
    expect(count).toBe(5);
    expect(changes.at(-1)!.proposal).toMatchObject({ status: 'discarded', busy: false });
    expect(s.proposal('p1')).toBe(changes.at(-1)!.proposal);
  });
});
