/**
 * The kinds of view, in one place: for each payload `kind` (and its version),
 * the view class, its local engine on a live widget (if it has one), and the
 * host of a saved page. A payload's `kind` picks its entry, live or saved;
 * both entries (js/widget.ts, js/standalone.ts) mount views only through
 * `mountLive` and `mountSaved`. A new view is one more entry in KINDS here
 * and one in src/shardviz/kinds.py (docs/payload.md, "Adding a kind");
 * js/host/kinds.test.ts holds the two lists equal.
 */

import { isPayload as isArrayPayload, PAYLOAD_VERSION, type Payload } from "../payload/array";
import { COMPARE_PAYLOAD_VERSION, isComparePayload } from "../payload/compare";
import { isProgramPayload, PROGRAM_PAYLOAD_VERSION, type ProgramPayload } from "../payload/program";
import { isTreePayload, TREE_PAYLOAD_VERSION, type TreePayload } from "../payload/tree";
import { payloadTraits } from "../traits/array";
import { type Host, readOnlyHost } from "../traits/host";
import { ShardvizView } from "../views/array";
import { CompareView } from "../views/compare";
import type { MountedView } from "../views/index";
import { ProgramView } from "../views/program";
import { TreeView } from "../views/tree";
import { arrayEngine, treeEngine } from "./engines";
import { type KernelLink, LiveHost, type LocalEngine } from "./live";
import { PageHost } from "./page";

export interface ViewKind {
  /** The payload's `kind`. */
  name: string;
  /** The payload version this front end draws. */
  version: number;
  /** Whether a payload is this kind's and well-formed (a saved page's is checked before it is drawn). */
  isPayload(payload: unknown): boolean;
  View: new (
    el: HTMLElement,
    // biome-ignore lint/suspicious/noExplicitAny: each view takes the host of its own traits
    host: any,
  ) => MountedView;
  /** The engine that predicts a live widget's answers, if the view has one. */
  liveEngine?: () => LocalEngine<object>;
  /** The host of a saved page: edited by the page's engine where it can be, else read-only. */
  savedHost(payload: unknown): Host<object>;
}

export const LOCAL_NOTE = "Computed in this page, no kernel: edit the mesh, the spec or the memory kind.";
export const SAVED_PROGRAM_NOTE =
  "Saved page, no kernel: this is the program as traced. Changing an input's spec traces and compiles the program again, which needs a live kernel (shardviz.ProgramWidget in a notebook).";
export const SAVED_TREE_NOTE =
  "Saved page, no kernel: the rules in force are shown; applying new ones needs a live kernel.";
export const TREE_PAGE_NOTE =
  "Computed in this page, no kernel: rules re-shard the tree as it was saved (one GLOB = SPEC per line).";

const ARRAY: ViewKind = {
  name: "array",
  version: PAYLOAD_VERSION,
  isPayload: isArrayPayload,
  View: ShardvizView,
  liveEngine: () => arrayEngine(true) as LocalEngine<object>,
  savedHost(payload) {
    const traits = payloadTraits(payload as Payload);
    return isArrayPayload(payload) && payload.version === PAYLOAD_VERSION
      ? (new PageHost(traits, arrayEngine(false), LOCAL_NOTE) as Host<object>)
      : readOnlyHost(traits);
  },
};

const PROGRAM: ViewKind = {
  name: "program",
  version: PROGRAM_PAYLOAD_VERSION,
  isPayload: isProgramPayload,
  View: ProgramView,
  savedHost(payload) {
    const program = payload as ProgramPayload;
    const texts = { input_specs: program.inputs.map((i) => i.spec_text) };
    return readOnlyHost({ payload, error: "", error_source: "", notice: "", ...texts }, SAVED_PROGRAM_NOTE);
  },
};

const TREE: ViewKind = {
  name: "tree",
  version: TREE_PAYLOAD_VERSION,
  isPayload: isTreePayload,
  View: TreeView,
  liveEngine: () => treeEngine(null) as LocalEngine<object>,
  savedHost(payload) {
    const tree = payload as TreePayload;
    const traits = { payload: tree, error: "", error_source: "", notice: "", rules_text: tree.rules_text ?? "" };
    // Rules apply to the tree as given: a page saved with rules in force has lost it.
    return tree.version === TREE_PAYLOAD_VERSION && !tree.rules_text
      ? (new PageHost(traits, treeEngine(tree), TREE_PAGE_NOTE) as Host<object>)
      : readOnlyHost(traits, SAVED_TREE_NOTE);
  },
};

export const SAVED_COMPARE_NOTE = "Saved page, no kernel: tracing a candidate again needs a live kernel.";

const COMPARE: ViewKind = {
  name: "compare",
  version: COMPARE_PAYLOAD_VERSION,
  isPayload: isComparePayload,
  View: CompareView,
  savedHost(payload) {
    return readOnlyHost({ payload, error: "", error_source: "", notice: "", rules_edit: "" }, SAVED_COMPARE_NOTE);
  },
};

export const KINDS: readonly ViewKind[] = [ARRAY, PROGRAM, TREE, COMPARE];

/** The kind a payload names; the array view (which says what is wrong) for anything else, or nothing yet. */
export function kindOf(payload: unknown): ViewKind {
  const name = (payload as { kind?: unknown } | null)?.kind;
  return KINDS.find((kind) => kind.name === name) ?? ARRAY;
}

/**
 * `kind`'s view over a live widget. Its `update` is the host's: js/widget.ts
 * calls it when the `answer` trait changes, and the view hears what changed.
 */
export function mountLive(kind: ViewKind, el: HTMLElement, link: KernelLink): MountedView {
  const host = new LiveHost<object>(link, kind.liveEngine?.() ?? null);
  const view = new kind.View(el, host);
  host.onChange((keys) => view.update(keys));
  return { update: () => host.answered(), receive: (message) => view.receive(message), destroy: () => view.destroy() };
}

/** The view of a saved page's payload: its kind's, if it is well-formed, else the array view, which says what is wrong. */
export function mountSaved(el: HTMLElement, payload: unknown): MountedView {
  const named = kindOf(payload);
  const kind = named.isPayload(payload) ? named : ARRAY;
  const host = kind.savedHost(payload);
  const view = new kind.View(el, host);
  host.onChange((keys) => view.update(keys));
  return view;
}
