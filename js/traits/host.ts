/**
 * The one host interface every view is drawn over, whatever stands behind it:
 * a live widget's kernel (js/host/live.ts), a saved page's own engine
 * (js/host/page.ts) or nothing that edits (`readOnlyHost`). A view reads its
 * traits with `get`, sends a user's edit with `edit`, and hears which traits
 * changed through `onChange` (the entries connect it to the view's `update`).
 */

/** The key a host adds to a change when the kernel has answered one of its edits (even an answer that changed nothing). */
export const ANSWERED = "answered";

export interface Host<T, C extends keyof T = never, M = never> {
  readonly readOnly: boolean;
  /** A line the editors show about where edits are worked out, or why there are none. */
  readonly note?: string;
  get<K extends keyof T>(key: K): T[K];
  /** A user's edit of one control. Called only from user events, never from a change handler. */
  edit<K extends C>(control: K, text: T[K]): void;
  /** Sends a request message to the kernel; absent where there is none. */
  send?: (message: M) => void;
  /** True while an edit sent to the kernel awaits its answer; absent where edits are answered at once. */
  editsInFlight?: () => boolean;
  /** Called with the names of the traits that changed (and ANSWERED); the last listener given wins. */
  onChange(listener: (keys: string[]) => void): void;
}

/**
 * The kernel's answer as the `answer` trait carries it (src/shardviz/widgets/base.py):
 * the highest edit number answered, what is shown, and each control's text in force.
 */
export interface Answer {
  seq: number;
  payload: unknown;
  error: string;
  error_source: string;
  notice: string;
  texts: Record<string, unknown>;
  /** What else a view's answer carries (the array view's `move`). */
  [extra: string]: unknown;
}

/** A view's traits read from an answer: the texts beside the rest, as a view reads them. */
export function answerTraits<T>(answer: Partial<Answer> | undefined): T {
  const { seq: _seq, texts, ...rest } = answer ?? {};
  return { payload: {}, error: "", error_source: "", notice: "", ...rest, ...(texts ?? {}) } as T;
}

/** A host that edits nothing: a saved page a kernel is needed for, a layout another view shows. */
export function readOnlyHost<T, C extends keyof T = never, M = never>(traits: T, note?: string): Host<T, C, M> {
  return {
    readOnly: true,
    ...(note === undefined ? {} : { note }),
    get: (key) => traits[key],
    edit: () => {},
    onChange: () => {},
  };
}

/** The keys whose values differ between two sets of traits (compared as JSON). */
export function changedKeys<T extends object>(before: T, after: T): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter(
    (key) => JSON.stringify(before[key as keyof T] ?? null) !== JSON.stringify(after[key as keyof T] ?? null),
  );
}
