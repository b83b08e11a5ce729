import { ChatState } from '../../chats/state';
import type { IApprovalStep, RunStep } from '../../events';
import {
  canDecide,
  canUndo,
  describeOutcome,
  diffLines,
  diffStat,
  editsFromJson,
  IProposalItem,
  proposalFromRow,
  selectedCells
} from '../../notebook/proposals';
import { describeApproval, IApprovalItem } from '../../runs/approvals';
import type { IAgentEvent } from '../../runs/state';
import type { ITurnRecord } from '../../runs/turns';

const CHAT = 'chat_1';
let seq = 0;

function ev(type: string, run_id: string, fields: Record<string, unknown> = {}): IAgentEvent {
  seq += 1;
  return { type, chat_id: CHAT, run_id, seq, ...fields };
}

beforeEach(() => {
  seq = 0;
});

/** Edits as core/proposals.py stores them (difflib unified diffs with cell headers). */
const EDITS = [
  {
    op: 'replace',
    cell_id: 'a1',
    source: 'x = 2\nprint(x)',
    old_source: 'x = 1\nprint(x)',
    reason: 'use 2',
    diff: '--- cell a1\n+++ cell a1\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 2\n print(x)\n',
    base: 'h1'
  },
  {
    op: 'insert',
    cell_id: 'n1',
    after: 'a1',
    cell_type: 'markdown',
    source: '# Notes',
    reason: 'a heading',
    diff: '--- cell n1\n+++ cell n1\n@@ -0,0 +1 @@\n+# Notes\n',
    base: 'h2'
  },
  {
    op: 'delete',
    cell_id: 'b2',
    old_source: 'junk',
    reason: 'unused',
    diff: '--- cell b2\n+++ cell b2\n@@ -1 +0,0 @@\n-junk\n',
    base: 'h3'
  }
];

function turn(run_id: string, fields: Partial<ITurnRecord> = {}): ITurnRecord {
  return {
    id: `turn_${run_id}`,
    chat_id: CHAT,
    run_id,
    userText: 'tidy my notebook',
    steering: [],
    replies: [{ text: 'Proposed.', done: true }],
    interrupted: false,
    created: '2025-01-01T00:00:00Z',
    durationMs: 1500,
    model: 'claude-sonnet-4-5',
    llm: {
      stopReason: 'done',
      endCause: 'done',
      modelCalls: 2,
      cells: 1,
      usage: { in: 1, out: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      cost: null
    },
    ...fields
  };
}

/** A run whose cell proposes EDITS and then ends. */
function proposingRun(run: string): IAgentEvent[] {
  return [
    ev('run_start', run, { started: 'x', text: 'tidy my notebook', message_id: 'm0' }),
    ev('cell_start', run, { cell_id: 'c1', kind: 'python', code: 'notebook.propose(...)' }),
    ev('proposal', run, { proposal_id: 'p1', path: 'work/a.ipynb', edits: EDITS }),
    ev('cell_end', run, { cell_id: 'c1', kind: 'python', outputs: [], status: 'ok' }),
    ev('reply', run, { text: 'Proposed.', message_id: 'm1' }),
    ev('run_end', run, { stop_reason: 'done', end_cause: 'done', turn: turn(run) })
  ];
}

describe('diffs', () => {
  it('classifies each line of a unified diff', () => {
    expect(diffLines(EDITS[0].diff).map(l => l.kind)).toEqual([
      'head',
      'head',
      'hunk',
      'del',
      'add',
      'context'
    ]);
    expect(diffLines('')).toEqual([]);
    expect(diffStat(EDITS[0].diff)).toEqual({ added: 1, removed: 1 });
    expect(diffStat(EDITS[2].diff)).toEqual({ added: 0, removed: 1 });
  });

  it('reads edits from a list or a row’s JSON text, skipping unknown ops', () => {
    const edits = editsFromJson(JSON.stringify([...EDITS, { op: 'explode', cell_id: 'z' }]))!;
    expect(edits.map(e => [e.op, e.cellId, e.after])).toEqual([
      ['replace', 'a1', null],
      ['insert', 'n1', 'a1'],
      ['delete', 'b2', null]
    ]);
    expect(edits[0].oldSource).toBe('x = 1\nprint(x)');
    expect(editsFromJson('not json')).toBeNull();
    expect(editsFromJson(undefined)).toBeNull();
  });

  it('sends the selected cells only for a strict subset', () => {
    const edits = editsFromJson(EDITS)!;
    expect(selectedCells(edits, new Set(['a1', 'n1', 'b2']))).toBeNull();
    expect(selectedCells(edits, new Set(['b2', 'a1']))).toEqual(['a1', 'b2']);
    expect(selectedCells(edits, new Set())).toEqual([]);
  });
});

describe('ChatState and proposals', () => {
  it('shows a proposal after the cell that made it, decided by proposal_end', () => {
    const s = new ChatState(CHAT);
    proposingRun('r1').forEach(e => s.applyEvent(e));
    const run = s.run('r1')!;
    expect(run.items.map(i => i.kind)).toEqual(['cell', 'proposal']);
    expect(run.items[1]).toEqual({ kind: 'proposal', proposalId: 'p1' }); // kept once, by id
    const p = (): IProposalItem => s.proposal('p1')!;
    expect(p()).toMatchObject({
      proposalId: 'p1',
      runId: 'r1',
      path: 'work/a.ipynb',
      agentCellId: 'c1',
      status: 'pending'
    });
    expect(p().edits!.map(e => e.cellId)).toEqual(['a1', 'n1', 'b2']);
    expect(canDecide(p())).toBe(true);
    expect(describeOutcome(p())).toBe('');
    // Decided after the run ended: its events still reach the card.
    expect(s.applyEvent(ev('proposal_end', 'r1', { proposal_id: 'p1', outcome: 'applied' }))).toBe(
      true
    );
    expect(p().status).toBe('applied');
    expect(p().applied).toEqual(['a1', 'n1', 'b2']);
    expect(canUndo(p())).toBe(true);
    expect(describeOutcome(p())).toBe('Applied to work/a.ipynb');
    s.applyEvent(ev('proposal_end', 'r1', { proposal_id: 'p1', outcome: 'undone' }));
    expect(p().status).toBe('undone');
    expect(canUndo(p())).toBe(false);
    expect(describeOutcome(p())).toBe('Undone: work/a.ipynb is back as it was');
    // A replayed event (catch-up) changes nothing.
    expect(s.applyEvent({ ...ev('proposal', 'r1'), seq: 3 })).toBe(false);
  });

  it('keeps the answer of an "Apply selected" and a conflict in the server’s words', () => {
    const s = new ChatState(CHAT);
    proposingRun('r1').forEach(e => s.applyEvent(e));
    const p = (): IProposalItem => s.proposal('p1')!;
    s.setProposalBusy('p1', true);
    expect(canDecide(p())).toBe(false);
    s.proposalOutcome('p1', 'partly', ['a1', 'b2']);
    expect(p()).toMatchObject({ status: 'partly', applied: ['a1', 'b2'], busy: false });
    expect(describeOutcome(p())).toBe('Partly applied to work/a.ipynb: 2 of 3 edits');
    // The same outcome's event, after the answer, keeps the cells sent.
    s.applyEvent(ev('proposal_end', 'r1', { proposal_id: 'p1', outcome: 'partly' }));
    expect(p().applied).toEqual(['a1', 'b2']);

    const t = new ChatState(CHAT);
    proposingRun('r2').forEach(e => t.applyEvent(e));
    t.proposalOutcome('p1', 'conflict', null, 'cell a1 changed since the proposal');
    const q = t.proposal('p1')!;
    expect(q.status).toBe('conflict');
    expect(q.error).toBe('cell a1 changed since the proposal');
    expect(describeOutcome(q)).toMatch(/^Conflict: .*nothing was written$/);
    expect(canDecide(q) || canUndo(q)).toBe(false);
  });

  it('rebuilds after a reload: the turn’s entry, then the full row, kept by the steps', () => {
    const s = new ChatState(CHAT);
    s.loadTurns(
      [
        turn('r1', {
          proposals: [{ proposal_id: 'p1', path: 'work/a.ipynb', status: 'applied', applied: ['a1'] }]
        })
      ],
      null
    );
    const p = (): IProposalItem => s.proposal('p1')!;
    expect(p()).toMatchObject({ runId: 'r1', status: 'applied', applied: ['a1'], edits: null });
    expect(s.run('r1')!.items.map(i => i.kind)).toEqual(['proposal']);
    // `GET agent/proposals?chat_id=` rows: edits and applied as the store keeps them.
    const rows = [
      {
        id: 'p1',
        chat_id: CHAT,
        run_id: 'r1',
        cell_id: 'c1',
        path: 'work/a.ipynb',
        edits: JSON.stringify(EDITS),
        status: 'partly',
        applied: JSON.stringify(['a1'])
      },
      { id: 'p9', chat_id: CHAT, run_id: 'gone', path: 'x.ipynb', edits: [], status: 'pending', applied: [] }
    ];
    expect(s.loadProposals(rows)).toBe(true);
    expect(p().status).toBe('partly');
    expect(p().edits!.map(e => e.op)).toEqual(['replace', 'insert', 'delete']);
    expect(p().agentCellId).toBe('c1');
    expect(s.proposal('p9')).toBeUndefined(); // a run this chat does not show
    expect(s.loadProposals(rows)).toBe(false);
    // The run's steps replace its items: the proposal stays, after its cell.
    const steps = [
      { type: 'user', text: 'tidy my notebook', message_id: 'm0' },
      {
        type: 'cell',
        cell_id: 'c1',
        code: 'notebook.propose(...)',
        end_status: 'ok',
        outputs: [],
        bubbles: [],
        copies: []
      },
      { type: 'reply', text: 'Proposed.', message_id: 'm1', status: 'ok' }
    ] as unknown as RunStep[];
    const before = p();
    expect(s.loadSteps('r1', steps)).toBe(true);
    expect(s.run('r1')!.items.map(i => i.kind)).toEqual(['cell', 'proposal']);
    expect(s.run('r1')!.items[1]).toEqual({ kind: 'proposal', proposalId: 'p1' });
    expect(s.proposal('p1')).toBe(before); // the steps leave the proposal as it was
    // Its events, caught up after the reload, still decide it.
    s.applyEvent(ev('proposal_end', 'r1', { proposal_id: 'p1', outcome: 'undone' }));
    expect(p().status).toBe('undone');
  });

  it('reads a row by proposal_id or id, and needs a run', () => {
    expect(proposalFromRow({ proposal_id: 'p2', path: 'a.ipynb', status: 'weird' }, 'r')).toMatchObject({
      proposalId: 'p2',
      runId: 'r',
      status: 'pending',
      edits: null
    });
    expect(proposalFromRow({ id: 'p3', path: 'a.ipynb' })).toBeNull();
    expect(proposalFromRow(null)).toBeNull();
  });
});

describe('ChatState and approvals', () => {
  /** The approval `a1` waiting in run `r`, read as it is now at each call. */
  function waiting(s: ChatState): () => IApprovalItem {
    s.applyEvent(ev('run_start', 'r', { started: 'x', text: 'go', message_id: 'm0' }));
    s.applyEvent(
      ev('approval', 'r', { approval_id: 'a1', kind: 'cell', code: 'rm()', summary: 'python cell' })
    );
    expect(s.run('r')!.items[0]).toBe(s.approval('r', 'a1'));
    return () => s.approval('r', 'a1')!;
  }

  it('opens on approval, closes on approval_end', () => {
    const s = new ChatState(CHAT);
    const a = waiting(s);
    expect(a()).toMatchObject({ kind: 'approval', what: 'cell', code: 'rm()', open: true, approved: null });
    expect(describeApproval(a())).toBe('The agent asks to run this cell');
    s.setApprovalBusy('r', 'a1', true);
    expect(a().busy).toBe(true);
    s.setApprovalBusy('r', 'a1', false, null, { approve: true, rest: true });
    expect(a()).toMatchObject({ open: true, approved: true, rest: true, busy: false });
    expect(s.applyEvent(ev('approval_end', 'r', { approval_id: 'a1', approve: true }))).toBe(true);
    expect(a().open).toBe(false);
    expect(describeApproval(a())).toBe('Approved (and the rest of this turn)');
    // A repeated approval event (catch-up) adds no second card.
    s.applyEvent(ev('approval', 'r', { approval_id: 'a1', kind: 'cell', code: 'rm()', summary: '' }));
    expect(s.run('r')!.items.filter(i => i.kind === 'approval')).toHaveLength(1);
  });

  it('asks for code in the person’s own kernel by its own words', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r', { started: 'x', text: 'go', message_id: 'm0' }));
    s.applyEvent(
      ev('approval', 'r', { approval_id: 'k1', kind: 'kernel', code: 'm = n + 1', summary: 'Run this code' })
    );
    const a = s.approval('r', 'k1')!;
    expect(a).toMatchObject({ what: 'kernel', code: 'm = n + 1', open: true });
    expect(describeApproval(a)).toBe('The agent asks to run this code in your kernel');
  });

  it('shows a denial, and the run’s end closes a wait nobody answered', () => {
    const s = new ChatState(CHAT);
    const a = waiting(s);
    s.applyEvent(ev('approval_end', 'r', { approval_id: 'a1', approve: false }));
    // Nobody clicked Deny here: a break or the turn's time limit closed it.
    expect(describeApproval(a())).toBe('Not approved: the run was stopped or ran out of time');
    const d = new ChatState(CHAT);
    const denied = waiting(d);
    d.setApprovalBusy('r', 'a1', false, null, { approve: false, rest: false });
    d.applyEvent(ev('approval_end', 'r', { approval_id: 'a1', approve: false }));
    expect(describeApproval(denied())).toBe('Denied');
    // The close can come before the POST's answer: the click already makes it the person's.
    const e = new ChatState(CHAT);
    const racing = waiting(e);
    e.setApprovalBusy('r', 'a1', true);
    e.applyEvent(ev('approval_end', 'r', { approval_id: 'a1', approve: false }));
    expect(describeApproval(racing())).toBe('Denied');
    e.setApprovalBusy('r', 'a1', false, null, { approve: false, rest: false });
    expect(describeApproval(racing())).toBe('Denied');
    // A POST refused (a break closed it first): not the person's decision.
    const f = new ChatState(CHAT);
    const late = waiting(f);
    f.setApprovalBusy('r', 'a1', true);
    f.applyEvent(ev('approval_end', 'r', { approval_id: 'a1', approve: false }));
    f.setApprovalBusy('r', 'a1', false, 'Could not answer: already decided');
    expect(describeApproval(late())).toBe('Not approved: the run was stopped or ran out of time');

    const t = new ChatState(CHAT);
    const b = waiting(t);
    t.applyEvent(ev('run_end', 'r', { stop_reason: 'break', end_cause: 'break_hard', turn: turn('r') }));
    expect(b().open).toBe(false);
    expect(describeApproval(b())).toBe('Not answered: the run ended');
  });
});

describe('ChatState rebuilds approvals and notices from steps', () => {
  function wait(seq: number, id: string, fields: Partial<IApprovalStep> = {}): IApprovalStep {
    return {
      type: 'approval', seq, approval_id: id, kind: 'cell', code: 'rm()', summary: 'Run the cell: rm()',
      status: 'ok', t: 't', approve: true, rest: false, by: 'person', parent: null, ...fields
    };
  }

  function loaded(steps: RunStep[]): ChatState {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r')], null);
    expect(s.loadSteps('r', steps)).toBe(true);
    return s;
  }

  it('closes each approval as its approval_end left it', () => {
    const steps: RunStep[] = [
      { type: 'user', seq: 1, text: 'go', at: 't', view: null, attachments: [], message_id: 'm0' },
      wait(3, 'a1', { rest: true }),
      wait(5, 'a2', { approve: false }),
      wait(6, 'a3', { kind: 'bash', approve: false, by: 'timeout' }),
      wait(7, 'a4', { kind: 'mcp', code: 'fs.write()', approve: false, by: 'break', parent: 9 }),
      wait(8, 'a5', { status: 'cancelled', approve: false, by: null }),
      wait(9, 'a6', { status: 'unfinished', approve: null, by: null })
    ];
    const items = loaded(steps).run('r')!.items as IApprovalItem[];
    expect(items.map(i => [i.approvalId, i.what, i.open, i.approved])).toEqual([
      ['a1', 'cell', false, true],
      ['a2', 'cell', false, false],
      ['a3', 'bash', false, false],
      ['a4', 'mcp', false, false],
      ['a5', 'cell', false, false],
      ['a6', 'cell', false, null]
    ]);
    expect(items.every(i => i.runId === 'r' && !i.busy && i.error === null)).toBe(true);
    expect(items[3].code).toBe('fs.write()');
    expect(items.map(describeApproval)).toEqual([
      'Approved (and the rest of this turn)',
      'Denied',
      'Not approved: the run was stopped or ran out of time',
      'Not approved: the run was stopped or ran out of time',
      'Not approved: the run was stopped or ran out of time',
      'Not answered: the run ended'
    ]);
  });

  it('shows the same closed card as the live events did', () => {
    const live = new ChatState(CHAT);
    live.applyEvent(ev('run_start', 'r', { started: 'x', text: 'go', message_id: 'm0' }));
    live.applyEvent(
      ev('approval', 'r', { approval_id: 'a1', kind: 'bash', code: 'ls', summary: 'Run the command: ls' })
    );
    live.setApprovalBusy('r', 'a1', false, null, { approve: false, rest: false });
    live.applyEvent(ev('approval_end', 'r', { approval_id: 'a1', approve: false }));
    live.applyEvent(ev('run_end', 'r', { stop_reason: 'done', end_cause: 'done', turn: turn('r') }));
    const rebuilt = loaded([
      wait(2, 'a1', { kind: 'bash', code: 'ls', summary: 'Run the command: ls', approve: false })
    ]);
    expect(rebuilt.run('r')!.items).toEqual(live.run('r')!.items);
  });

  it('shows a notice as a muted line where the run took it', () => {
    const s = loaded([
      { type: 'user', seq: 1, text: 'go', at: 't', view: null, attachments: [], message_id: 'm0' },
      { type: 'notice', seq: 4, text: 'The proposal was applied.', at: '2025-03-01T10:00:05Z' }
    ]);
    expect(s.run('r')!.items).toEqual([
      { kind: 'notice', text: 'Notice: The proposal was applied.', at: '2025-03-01T10:00:05Z' }
    ]);
  });
});
