/** Byte counts as short cell tags and as exact text. */

import { formatBytes } from "./ranges";

const SHORT_UNITS = ["B", "K", "M", "G", "T", "P"];

/** At most four characters and a unit letter, for small cells: `512B`, `2.6K`, `48M`, `3.0G`. */
export function formatBytesShort(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < SHORT_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${value}B`;
  return `${value < 10 ? value.toFixed(1) : Math.round(value)}${SHORT_UNITS[unit]}`;
}

/** `15,120,780,804`: an integer with thousands separators (toLocaleString costs a formatter per call). */
export function formatCount(value: number): string {
  const digits = String(Math.abs(Math.trunc(value)));
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return value < 0 ? `-${out}` : out;
}

/** `16 B`, or `4.0 KiB (4,096 B)` where the rounding hides the exact count. */
export function formatBytesExact(bytes: number): string {
  const short = formatBytes(bytes);
  return bytes < 1024 ? short : `${short} (${formatCount(bytes)} B)`;
}
