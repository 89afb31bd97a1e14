/**
 * The read-only host every view is drawn over where nothing can be edited: a
 * saved page, a layout another view shows. It answers from `traits` as they
 * are (a caller may change them and ask its view to redraw) and ignores edits.
 */

export interface ReadOnlyHost<T> {
  readonly readOnly: true;
  /** Why nothing can be edited, shown by the editors. */
  readonly note?: string;
  get<K extends keyof T>(key: K): T[K];
  edit(): void;
}

export function readOnlyHost<T>(traits: T, note?: string): ReadOnlyHost<T> {
  return {
    readOnly: true,
    ...(note === undefined ? {} : { note }),
    get: (key) => traits[key],
    edit: () => {},
  };
}
