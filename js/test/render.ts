/** Renders the widget through its real entry module with a fake model. */

import type { AnyModel } from "@anywidget/types";
import { afterEach, beforeEach, expect, type MockInstance, vi } from "vitest";
import { SEND_WAIT_MS } from "../host/live";
import type { Payload } from "../payload/array";
import type { SyncedTraits } from "../traits/array";
import widget from "../widget";
import { FakeModel } from "./fakeModel";

export interface Rendered {
  el: HTMLElement;
  model: FakeModel;
  cleanup: () => void;
}

export function renderWidget(
  payload: Payload | Record<string, never>,
  overrides: Partial<SyncedTraits> = {},
): Rendered {
  const el = document.createElement("div");
  document.body.append(el);
  const model = new FakeModel(payload, overrides);
  const cleanup = widget.render({ model: model as unknown as AnyModel<never>, el });
  return { el, model, cleanup };
}

/**
 * What a model has sent to the kernel, once the edits waiting for their
 * answer's frame have gone (the host sends an edit it answered after that
 * frame: js/host/live.ts). Needs fake timers.
 */
export function sent<T extends { saved: unknown[] }>(model: T): T["saved"] {
  sendWaitingEdits();
  return model.saved;
}

/** Lets the edits waiting for their answer's frame go to the kernel (see `sent`). Needs fake timers. */
export function sendWaitingEdits(): void {
  if (!vi.isFakeTimers()) throw new Error("sendWaitingEdits needs fake timers (vi.useFakeTimers())");
  vi.advanceTimersByTime(SEND_WAIT_MS);
}

export function query<T extends Element = HTMLElement>(root: ParentNode, selector: string): T {
  const found = root.querySelector<T>(selector);
  if (!found) throw new Error(`nothing matches ${selector}`);
  return found;
}

/**
 * The colour a mesh grid cell is filled with, as CSS computes it: its inline
 * background, or (past 64 devices, where fills are drawn on a canvas under
 * the cells) the colour its data-fill says that canvas draws.
 */
export function cellFill(cell: HTMLElement): string {
  const probe = document.createElement("div");
  probe.style.backgroundColor = cell.style.backgroundColor || (cell.getAttribute("data-fill") ?? "");
  return probe.style.backgroundColor;
}

/** A view's cleanup removes every listener it added to the model and its own DOM. */
export function expectCleansUp({
  model,
  cleanup,
  el,
}: {
  model: FakeModel;
  cleanup: () => void;
  el: HTMLElement;
}): void {
  expect(model.listenerCount()).toBeGreaterThan(0);
  cleanup();
  expect(model.listenerCount()).toBe(0);
  expect(el.querySelector(".shardviz")).toBeNull();
}

/** In the calling describe block: fake timers and animation frames (not performance: the tests count the
 * render measures, cleared before each test), and console.warn muted and kept for the test to read. */
export function fakeFramesAndMutedWarnings(): { readonly warn: MockInstance } {
  const muted = {} as { warn: MockInstance };
  beforeEach(() => {
    performance.clearMeasures();
    muted.warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "requestAnimationFrame", "cancelAnimationFrame"] });
  });
  afterEach(() => {
    muted.warn.mockRestore();
    vi.useRealTimers();
  });
  return muted;
}
