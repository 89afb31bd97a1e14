/**
 * What every view's root shares: its class (the stylesheet scopes every rule
 * under it) and the timing of its renders between performance marks.
 */

export const ROOT_CLASS = "shardviz";
export const RENDER_MEASURE = "shardviz:render";

/** Renders in progress: a render inside another (the tree view's leaf pictures) is part of it. */
let measuring = 0;

/** Runs `draw` between performance marks so hosts and benchmarks can time it. */
export function measured(draw: () => void): void {
  if (measuring > 0) {
    draw();
    return;
  }
  const perf = globalThis.performance;
  const start = `${RENDER_MEASURE}:start`;
  perf?.mark?.(start);
  measuring++;
  try {
    draw();
  } finally {
    measuring--;
    perf?.measure?.(RENDER_MEASURE, start);
    // The start mark has served; without this the timeline grows by one entry per edit.
    perf?.clearMarks?.(start);
  }
}
