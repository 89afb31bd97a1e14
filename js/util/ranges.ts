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

const TIME_UNITS: [string, number][] = [
  ["s", 1],
  ["ms", 1e-3],
  ["\u00b5s", 1e-6],
  ["ns", 1e-9],
  ["ps", 1e-12],
];

/** `value` to three significant figures (all its integer digits where it has more), no trailing zeros. */
function threeFigures(value: number): string {
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(value))));
  const text = pyFixed(value, digits);
  return text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text;
}

/**
 * A time in the unit that fits, three figures, zeros after the point dropped: `505 ms`, `52 µs`,
 * `21.9 ns`, as Python's `format_seconds` (shardviz.text.ranges) writes it; a figure that rounds up
 * to 1000 of its unit is written in the next one.
 */
export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds)) return Number.isNaN(seconds) ? "nan" : seconds > 0 ? "inf" : "-inf";
  if (seconds === 0) return "0 s";
  const size = Math.abs(seconds);
  let unit = TIME_UNITS.findIndex(([, scale]) => size >= scale);
  if (unit < 0) unit = TIME_UNITS.length - 1;
  let text = threeFigures(seconds / TIME_UNITS[unit][1]);
  if (unit > 0 && Math.abs(Number(text)) >= 1000) {
    unit -= 1;
    text = threeFigures(seconds / TIME_UNITS[unit][1]);
  }
  return `${text} ${TIME_UNITS[unit][0]}`;
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
