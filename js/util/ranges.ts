/** Compact text for sets of integers and index intervals. */

import type { Interval } from "../payload/array";

/**
 * Sorts ids and merges consecutive runs: `[0,1,2,3]` -> `"0-3"`,
 * `[4,0]` -> `"0,4"`, `[0,1,2,3,8,9,10,11]` -> `"0-3,8-11"`.
 * Two consecutive values stay a list (`"4,5"`) since a range saves nothing.
 */
export function compressIds(ids: Iterable<number>): string {
  const values = Array.from(new Set(ids)).sort((a, b) => a - b);
  const parts: string[] = [];
  let i = 0;
  while (i < values.length) {
    let j = i;
    while (j + 1 < values.length && values[j + 1] === values[j] + 1) j++;
    if (j - i >= 2) {
      parts.push(`${values[i]}-${values[j]}`);
    } else {
      for (let k = i; k <= j; k++) parts.push(String(values[k]));
    }
    i = j + 1;
  }
  return parts.join(",");
}

/** Python-style slice text for one interval: `0:4`. */
export function formatInterval([start, stop]: Interval): string {
  return `${start}:${stop}`;
}

/** Index text for a block: `[0:2, 0:4]`; a scalar reads `[]`. */
export function formatIndex(intervals: readonly Interval[]): string {
  return `[${intervals.map(formatInterval).join(", ")}]`;
}

/**
 * `f"{value:.{digits}f}"`: Python rounds a tie (an exact half, as 52.5 or
 * 2.25 are in binary) to even, where `toFixed` rounds it up.
 */
export function pyFixed(value: number, digits: number): string {
  const scaled = value * 10 ** digits;
  const floor = Math.floor(scaled);
  if (scaled - floor !== 0.5) return value.toFixed(digits);
  return ((floor % 2 === 0 ? floor : floor + 1) / 10 ** digits).toFixed(digits);
}

/** Human byte counts: `512 B`, `4.0 KiB`, `1.5 MiB`, rounded as Python's `format_bytes` rounds them. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${pyFixed(value, value < 10 ? 1 : 0)} ${units[unit]}`;
}
