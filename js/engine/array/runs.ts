/**
 * Run encoding of integer columns (docs/payload.md): the same greedy
 * left-to-right split into arithmetic runs `[start, step, count]` as
 * src/shardviz/engine/runs.py, so equal columns encode to equal runs.
 */

import type { Run } from "../../payload/array";

export function encodeRuns(values: ArrayLike<number>): Run[] {
  const n = values.length;
  const runs: Run[] = [];
  let i = 0;
  while (i < n) {
    if (i === n - 1) {
      runs.push([values[i], 0, 1]);
      break;
    }
    const step = values[i + 1] - values[i];
    let end = i + 1; // last index of the run
    while (end + 1 < n && values[end + 1] - values[end] === step) end++;
    runs.push([values[i], step, end - i + 1]);
    i = end + 1;
  }
  return runs;
}
