import {
  canScroll,
  distanceFromBottom,
  FollowScroller,
  FollowState,
  IScrollContainer
} from '../../chats/follow';

/** A scroll container on plain numbers: the browser's clamping and scroll events. */
class FakeBox implements IScrollContainer {
  constructor(
    public scrollHeight = 1000,
    public clientHeight = 400
  ) {}

  children: Element[] = [];
  events: string[] = [];
  private top = 0;
  private listeners = new Map<string, Set<(ev: any) => void>>();

  get scrollTop(): number {
    return this.top;
  }

  /** Setting clamps, as a browser does; a change queues a scroll event. */
  set scrollTop(value: number) {
    const next = Math.max(0, Math.min(value, this.scrollHeight - this.clientHeight));
    if (next !== this.top) {
      this.top = next;
      this.events.push('scroll');
    }
  }

  addEventListener(type: string, listener: (ev: any) => void): void {
    if (!this.listeners.has(type)) {
      this.listeners.set(type, new Set());
    }
    this.listeners.get(type)!.add(listener);
  }

  removeEventListener(type: string, listener: (ev: any) => void): void {
    this.listeners.get(type)?.delete(listener);
  }

  listenerCount(): number {
    return [...this.listeners.values()].reduce((n, s) => n + s.size, 0);
  }

  dispatch(type: string, ev: any = {}): void {
    this.listeners.get(type)?.forEach(l => l(ev));
  }

  /** Deliver the queued scroll events (the browser does so once per frame). */
  flushScroll(): void {
    if (this.events.length) {
      this.events = [];
      this.dispatch('scroll');
    }
  }

  /** The person scrolls to `top` (the scroll event follows). */
  userScrollTo(top: number): void {
    this.scrollTop = top;
    this.flushScroll();
  }

  get bottom(): number {
    return this.scrollHeight - this.clientHeight;
  }
}

describe('FollowState', () => {
  it('measures the distance from the bottom', () => {
    const box = new FakeBox(1000, 400);
    expect(distanceFromBottom(box)).toBe(600);
    box.scrollTop = 600;
    expect(distanceFromBottom(box)).toBe(0);
    expect(canScroll(box)).toBe(true);
    expect(canScroll(new FakeBox(300, 400))).toBe(false);
  });

  it('sticks to the bottom while content grows', () => {
    const box = new FakeBox();
    const state = new FollowState();
    expect(state.contentChanged(box)).toBe(true);
    expect(box.scrollTop).toBe(box.bottom);
    box.flushScroll();
    state.scrolled(box); // its own scroll: still pinned
    expect(state.pinned).toBe(true);
    box.scrollHeight = 1600; // an image loaded
    state.contentChanged(box);
    expect(box.scrollTop).toBe(1200);
    expect(state.pinned).toBe(true);
  });

  it('stops following when the person scrolls up, even a little', () => {
    const box = new FakeBox();
    const state = new FollowState();
    state.contentChanged(box);
    box.flushScroll();
    state.scrolled(box);
    box.scrollTop = box.bottom - 10; // a trackpad's small step up
    state.scrolled(box);
    expect(state.pinned).toBe(false);
    box.scrollHeight = 1500; // streamed text arrives
    expect(state.contentChanged(box)).toBe(false);
    expect(box.scrollTop).toBe(590); // the view stays where the person put it
  });

  it('follows again at the bottom, or near it going down', () => {
    const box = new FakeBox();
    const state = new FollowState();
    state.contentChanged(box);
    box.scrollTop = 100;
    state.scrolled(box);
    expect(state.pinned).toBe(false);
    box.scrollTop = box.bottom - 20; // going down, within the threshold
    state.scrolled(box);
    expect(state.pinned).toBe(true);
    box.scrollTop = 0;
    state.scrolled(box);
    expect(state.pinned).toBe(false);
    box.scrollTop = box.bottom;
    state.scrolled(box);
    expect(state.pinned).toBe(true);
  });

  it('pin() scrolls to the bottom and follows again', () => {
    const box = new FakeBox();
    const state = new FollowState();
    box.scrollTop = 0;
    state.userScrollsUp(box);
    expect(state.pinned).toBe(false);
    box.scrollHeight = 3000;
    state.pin(box);
    expect(state.pinned).toBe(true);
    expect(box.scrollTop).toBe(2600);
  });

  it('ignores an upward intent when there is nothing to scroll', () => {
    const box = new FakeBox(300, 400);
    const state = new FollowState();
    state.userScrollsUp(box);
    expect(state.pinned).toBe(true);
  });

  it('follows again when the content shrinks under an unpinned view', () => {
    const box = new FakeBox();
    const state = new FollowState();
    state.contentChanged(box);
    box.scrollTop = 100;
    state.scrolled(box);
    expect(state.pinned).toBe(false);
    box.scrollHeight = 450; // a cell collapsed
    box.scrollTop = box.scrollTop; // the browser clamps to 50
    state.contentChanged(box);
    expect(state.pinned).toBe(true);
  });

  it('a hidden view (no size) stays pinned and scrolls when shown', () => {
    const box = new FakeBox(0, 0);
    const state = new FollowState();
    expect(state.contentChanged(box)).toBe(false);
    expect(state.pinned).toBe(true);
    box.scrollHeight = 2000;
    box.clientHeight = 500;
    expect(state.contentChanged(box)).toBe(true);
    expect(box.scrollTop).toBe(1500);
  });
});

/** ResizeObserver / MutationObserver stand-ins the test triggers by hand. */
class FakeResizeObserver {
  static last: FakeResizeObserver | null = null;
  observed: unknown[] = [];
  disconnected = false;
  constructor(private readonly cb: () => void) {
    FakeResizeObserver.last = this;
  }
  observe(el: unknown): void {
    this.observed.push(el);
  }
  disconnect(): void {
    this.disconnected = true;
  }
  fire(): void {
    this.cb();
  }
}

class FakeMutationObserver {
  static last: FakeMutationObserver | null = null;
  disconnected = false;
  constructor(private readonly cb: (records: any[]) => void) {
    FakeMutationObserver.last = this;
  }
  observe(): void {
    /* nothing */
  }
  disconnect(): void {
    this.disconnected = true;
  }
  fire(records: any[]): void {
    this.cb(records);
  }
}

function scroller(box: FakeBox, changes: boolean[]) {
  const frames: (() => void)[] = [];
  const follow = new FollowScroller(box, {
    onPinnedChanged: pinned => changes.push(pinned),
    ResizeObserver: FakeResizeObserver as unknown as typeof ResizeObserver,
    MutationObserver: FakeMutationObserver as unknown as typeof MutationObserver,
    requestFrame: cb => frames.push(cb),
    cancelFrame: () => undefined
  });
  const runFrames = (): void => {
    frames.splice(0).forEach(f => f());
  };
  return { follow, ro: FakeResizeObserver.last!, mo: FakeMutationObserver.last!, runFrames };
}

describe('FollowScroller', () => {
  it('observes the container and its children, follows on resize', () => {
    const box = new FakeBox();
    const first = { nodeType: 1 } as unknown as Element;
    box.children = [first];
    const { ro } = scroller(box, []);
    expect(ro.observed).toEqual([box, first]);
    ro.fire();
    expect(box.scrollTop).toBe(box.bottom);
  });

  it('observes added children and follows on mutations, once per frame', () => {
    const box = new FakeBox();
    const { ro, mo, runFrames } = scroller(box, []);
    const added = { nodeType: 1 };
    const text = { nodeType: 3 };
    box.scrollHeight = 1400;
    mo.fire([{ target: box, addedNodes: [added, text] }]);
    mo.fire([{ target: {}, addedNodes: [] }]);
    expect(ro.observed).toEqual([box, added]);
    expect(box.scrollTop).toBe(0); // not yet: at the next frame
    runFrames();
    expect(box.scrollTop).toBe(1000);
  });

  it('shows the jump control when the person scrolls up, hides it on pin', () => {
    const box = new FakeBox();
    const changes: boolean[] = [];
    const { follow, ro } = scroller(box, changes);
    ro.fire();
    box.flushScroll();
    expect(follow.pinned).toBe(true);
    box.dispatch('wheel', { deltaY: -40 }); // the intent, before the scroll event
    expect(follow.pinned).toBe(false);
    expect(changes).toEqual([false]);
    box.userScrollTo(200);
    box.scrollHeight = 2000;
    ro.fire(); // content grows: the view stays
    expect(box.scrollTop).toBe(200);
    follow.pin(); // "Jump to latest"
    expect(box.scrollTop).toBe(1600);
    expect(changes).toEqual([false, true]);
    box.flushScroll(); // its own scroll event changes nothing
    expect(follow.pinned).toBe(true);
  });

  it('keys that go up stop following; wheel down does not', () => {
    const box = new FakeBox();
    const { follow, ro } = scroller(box, []);
    ro.fire();
    box.dispatch('wheel', { deltaY: 50 });
    box.dispatch('keydown', { key: 'End' });
    expect(follow.pinned).toBe(true);
    box.dispatch('keydown', { key: 'PageUp' });
    expect(follow.pinned).toBe(false);
  });

  it('dispose() disconnects and removes its listeners', () => {
    const box = new FakeBox();
    const { follow, ro, mo } = scroller(box, []);
    expect(box.listenerCount()).toBe(3);
    follow.dispose();
    expect(ro.disconnected).toBe(true);
    expect(mo.disconnected).toBe(true);
    expect(box.listenerCount()).toBe(0);
  });
});
