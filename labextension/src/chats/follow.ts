/**
 * The chat follows the conversation: the message list stays scrolled to the bottom while
 * its content grows (late images, streamed text, live cell output, a resized panel),
 * unless the person scrolled up; then a "jump to latest" control is shown, and clicking it
 * (or scrolling back to the bottom) follows again.
 *
 * `FollowState` is the logic, on plain numbers (no DOM): a "pinned to bottom" flag that
 * only a person's scroll clears, and the scroll position the view itself last set, so its
 * own scrolls are never mistaken for the person's. `FollowScroller` binds it to a scroll
 * container: a ResizeObserver on the container and on each of its children (any growth,
 * including an image that loads late), a MutationObserver as a backstop (nodes added,
 * text changed), and the container's scroll, wheel and key events.
 */

/** The scroll metrics of a scroll container (an element, or a test's stand-in). */
export interface IScrollMetrics {
  scrollTop: number;
  readonly scrollHeight: number;
  readonly clientHeight: number;
}

/** Within this many pixels of the bottom, a downward scroll follows again. */
export const FOLLOW_THRESHOLD_PX = 32;
/** Within this many pixels, the view is at the bottom (sub-pixel rounding). */
const AT_BOTTOM_PX = 2;

/** How far the view is from the bottom of its content (0 when at the bottom). */
export function distanceFromBottom(box: IScrollMetrics): number {
  return Math.max(0, box.scrollHeight - box.clientHeight - box.scrollTop);
}

/** True when the content is taller than the view (there is something to scroll). */
export function canScroll(box: IScrollMetrics): boolean {
  return box.scrollHeight - box.clientHeight > AT_BOTTOM_PX;
}

/** Whether the view follows the bottom, and why it stopped (see the module comment). */
export class FollowState {
  /** True while the view sticks to the bottom; false once the person scrolled up. */
  get pinned(): boolean {
    return this._pinned;
  }

  /** Follow again and scroll to the bottom (on send, on "jump to latest"). */
  pin(box: IScrollMetrics): void {
    this._pinned = true;
    this.scrollToBottom(box);
  }

  /**
   * The content or the view's size changed: scroll to the bottom when pinned. A view
   * that is not pinned but sits at the bottom anyway (the content shrank) follows again.
   * Returns true when it scrolled.
   */
  contentChanged(box: IScrollMetrics): boolean {
    if (!this._pinned && distanceFromBottom(box) <= AT_BOTTOM_PX) {
      this._pinned = true;
    }
    if (!this._pinned) {
      return false;
    }
    return this.scrollToBottom(box);
  }

  /**
   * The container scrolled. The view's own scroll changes nothing; a person's scroll
   * up stops following; reaching the bottom (or near it, going down) follows again.
   */
  scrolled(box: IScrollMetrics): void {
    const top = box.scrollTop;
    const own = this.ownTop !== null && Math.abs(top - this.ownTop) <= 1;
    this.ownTop = null;
    if (!own) {
      const distance = distanceFromBottom(box);
      if (distance <= AT_BOTTOM_PX) {
        this._pinned = true;
      } else if (top < this.lastTop) {
        this._pinned = false;
      } else if (distance <= FOLLOW_THRESHOLD_PX) {
        this._pinned = true;
      }
    }
    this.lastTop = top;
  }

  /**
   * The person asked to go up (wheel up, PageUp, ArrowUp, Home): stop following at once,
   * before the scroll event, so growing content cannot pull the view back down.
   */
  userScrollsUp(box: IScrollMetrics): void {
    if (canScroll(box)) {
      this._pinned = false;
    }
  }

  private scrollToBottom(box: IScrollMetrics): boolean {
    const before = box.scrollTop;
    box.scrollTop = Math.max(0, box.scrollHeight - box.clientHeight);
    // Read back: the browser rounds and clamps. Only a change fires a scroll event.
    const after = box.scrollTop;
    this.lastTop = after;
    if (after === before) {
      return false;
    }
    this.ownTop = after;
    return true;
  }

  private _pinned = true;
  private ownTop: number | null = null;
  private lastTop = 0;
}

/** What `FollowScroller` needs of the scroll container (an HTMLElement in the panel). */
export interface IScrollContainer extends IScrollMetrics {
  readonly children: ArrayLike<Element>;
  addEventListener(type: string, listener: (ev: any) => void, options?: any): void;
  removeEventListener(type: string, listener: (ev: any) => void, options?: any): void;
}

export interface IFollowOptions {
  /** Called when `pinned` changed (show or hide the "jump to latest" control). */
  onPinnedChanged?: (pinned: boolean) => void;
  /** Injected in tests; the browser's by default. */
  ResizeObserver?: typeof ResizeObserver;
  MutationObserver?: typeof MutationObserver;
  requestFrame?: (cb: () => void) => number;
  cancelFrame?: (handle: number) => void;
}

const UP_KEYS = new Set(['PageUp', 'ArrowUp', 'Home']);

/** Keeps a scroll container at its bottom while pinned (see the module comment). */
export class FollowScroller {
  constructor(
    private readonly box: IScrollContainer,
    private readonly options: IFollowOptions = {}
  ) {
    const RO = options.ResizeObserver ?? globalThis.ResizeObserver;
    const MO = options.MutationObserver ?? globalThis.MutationObserver;
    this.requestFrame = options.requestFrame ?? (cb => requestAnimationFrame(cb));
    this.cancelFrame = options.cancelFrame ?? (h => cancelAnimationFrame(h));
    // Resize callbacks run after layout and before paint: scrolling there never shows
    // a frame of unscrolled content.
    this.resizes = RO ? new RO(() => this.follow()) : null;
    this.resizes?.observe(box as unknown as Element);
    this.mutations = MO
      ? new MO(records => {
          for (const r of records) {
            if (r.target === (box as unknown)) {
              r.addedNodes.forEach(n => this.observeChild(n));
            }
          }
          this.schedule();
        })
      : null;
    this.mutations?.observe(box as unknown as Node, {
      childList: true,
      subtree: true,
      characterData: true
    });
    Array.from(box.children).forEach(c => this.observeChild(c));
    box.addEventListener('scroll', this.onScroll, { passive: true });
    box.addEventListener('wheel', this.onWheel, { passive: true });
    box.addEventListener('keydown', this.onKey);
  }

  /** True while the view sticks to the bottom. */
  get pinned(): boolean {
    return this.state.pinned;
  }

  /** Follow again and scroll to the bottom now. */
  pin(): void {
    this.state.pin(this.box);
    this.notify();
  }

  /** The content changed (the view re-rendered): follow now when pinned. */
  contentChanged(): void {
    this.follow();
  }

  dispose(): void {
    this.resizes?.disconnect();
    this.mutations?.disconnect();
    if (this.frame !== null) {
      this.cancelFrame(this.frame);
      this.frame = null;
    }
    this.box.removeEventListener('scroll', this.onScroll, { passive: true });
    this.box.removeEventListener('wheel', this.onWheel, { passive: true });
    this.box.removeEventListener('keydown', this.onKey);
  }

  private observeChild(node: Node | Element): void {
    if ((node as Element).nodeType === 1 && this.resizes) {
      this.resizes.observe(node as Element);
    }
  }

  private schedule(): void {
    if (this.frame === null) {
      this.frame = this.requestFrame(() => {
        this.frame = null;
        this.follow();
      });
    }
  }

  private follow(): void {
    this.state.contentChanged(this.box);
    this.notify();
  }

  private notify(): void {
    const pinned = this.state.pinned;
    if (pinned !== this.lastNotified) {
      this.lastNotified = pinned;
      this.options.onPinnedChanged?.(pinned);
    }
  }

  private readonly onScroll = (): void => {
    this.state.scrolled(this.box);
    this.notify();
  };

  private readonly onWheel = (ev: { deltaY: number }): void => {
    if (ev.deltaY < 0) {
      this.state.userScrollsUp(this.box);
      this.notify();
    }
  };

  private readonly onKey = (ev: { key: string }): void => {
    if (UP_KEYS.has(ev.key)) {
      this.state.userScrollsUp(this.box);
      this.notify();
    }
  };

  private readonly state = new FollowState();
  private readonly resizes: ResizeObserver | null;
  private readonly mutations: MutationObserver | null;
  private readonly requestFrame: (cb: () => void) => number;
  private readonly cancelFrame: (handle: number) => void;
  private frame: number | null = null;
  private lastNotified = true;
}
