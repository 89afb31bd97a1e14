/**
 * The kinds of view, in one place: for each payload `kind`, what recognises
 * its payload, the view class, the traits it reads from a widget's model, and
 * the two hosts it is drawn over: a live widget's model (js/widget.ts) and a
 * saved page's payload (./exportPage.ts). Both entries mount views through
 * this table; a new view is one more entry here (and one more in
 * src/shardviz/kinds.py).
 */

import type { AnyModel } from "@anywidget/types";
import { isPayload as isArrayPayload, PAYLOAD_VERSION, type Payload } from "../payload/array";
import { isComparePayload } from "../payload/compare";
import { isProgramPayload, type ProgramPayload } from "../payload/program";
import { isTreePayload, type TreePayload } from "../payload/tree";
import { payloadTraits, TRAIT_NAMES, type ViewHost } from "../traits/array";
import { EDIT_ANSWERED } from "../traits/edits";
import { PROGRAM_TRAIT_NAMES, type ProgramHost } from "../traits/program";
import { readOnlyHost } from "../traits/readOnly";
import { TREE_TRAIT_NAMES, type TreeHost } from "../traits/tree";
import { ShardvizView } from "../views/array";
import { type CompareHost, CompareView } from "../views/compare";
import type { ViewKind as KindName, MountedView } from "../views/index";
import { ProgramView } from "../views/program";
import { TreeView } from "../views/tree";
import { COMPARE_TRAIT_NAMES, type CompareTraits, modelCompareHost, staticCompareHost } from "./compareHost";
import { LiveHost, type LiveModel } from "./liveHost";
import { PageHost } from "./pageHost";
import { modelProgramHost, type ProgramModel, staticProgramHost } from "./programHost";
import { modelTreeHost, staticTreeHost, type TreeModel } from "./treeHost";

export interface ViewKind<H> {
  /** Whether a saved page's payload is this kind's (and well-formed). */
  isPayload(payload: unknown): boolean;
  View: new (el: HTMLElement, host: H) => MountedView;
  /** The model's traits the view reads; a change of one is passed on to it. */
  traitNames: readonly string[];
  /** The host over a live widget's model: edits go to the kernel. */
  liveHost(model: AnyModel): H;
  /** The host of a saved page's payload: read-only, unless the page can answer edits itself. */
  staticHost(payload: unknown): H;
}

/**
 * A host that answers from more than its model (the array view's local
 * engine): it says when the view should redraw, and hears the model's changes
 * itself rather than through the view.
 */
interface AnsweringHost {
  onChange(listener: (keys: string[]) => void): void;
  modelChanged?(key: string): void;
  answered?(seq: number): void;
}

function isAnswering(host: unknown): host is AnsweringHost {
  return typeof (host as Partial<AnsweringHost>).onChange === "function";
}

const ARRAY: ViewKind<ViewHost> = {
  isPayload: isArrayPayload,
  View: ShardvizView,
  traitNames: TRAIT_NAMES,
  liveHost: (model) => new LiveHost(model as unknown as LiveModel),
  staticHost: (payload) =>
    isArrayPayload(payload) && payload.version === PAYLOAD_VERSION
      ? new PageHost(payload)
      : readOnlyHost(payloadTraits(payload as Payload)),
};

const PROGRAM: ViewKind<ProgramHost> = {
  isPayload: isProgramPayload,
  View: ProgramView,
  traitNames: PROGRAM_TRAIT_NAMES,
  liveHost: (model) => modelProgramHost(model as unknown as ProgramModel),
  staticHost: (payload) => staticProgramHost(payload as ProgramPayload),
};

const TREE: ViewKind<TreeHost> = {
  isPayload: isTreePayload,
  View: TreeView,
  traitNames: TREE_TRAIT_NAMES,
  liveHost: (model) => modelTreeHost(model as unknown as TreeModel),
  staticHost: (payload) => staticTreeHost(payload as TreePayload),
};

const COMPARE: ViewKind<CompareHost> = {
  isPayload: isComparePayload,
  View: CompareView,
  traitNames: COMPARE_TRAIT_NAMES,
  liveHost: (model) => modelCompareHost(model as unknown as AnyModel<CompareTraits>),
  staticHost: staticCompareHost,
};

// biome-ignore lint/suspicious/noExplicitAny: each entry pairs its own host type with its view
export const KINDS: Readonly<Record<KindName, ViewKind<any>>> = {
  array: ARRAY,
  program: PROGRAM,
  tree: TREE,
  compare: COMPARE,
};

/** Every trait name any view reads, and the edit answer: the widget listens for a change of each. */
export const ALL_TRAIT_NAMES: readonly string[] = Array.from(
  new Set<string>([...Object.values(KINDS).flatMap((kind) => kind.traitNames), EDIT_ANSWERED]),
);

/** `kind`'s view over a widget's model; the model's changes go to the view, or to a host that answers itself. */
export function mountLive<H>(kind: ViewKind<H>, el: HTMLElement, model: AnyModel): MountedView {
  const host = kind.liveHost(model);
  const view = new kind.View(el, host);
  if (!isAnswering(host)) return view;
  host.onChange((keys) => view.update(keys));
  const traits = new Set<string>(kind.traitNames);
  return {
    update: (changed) => {
      for (const name of changed) {
        if (name === EDIT_ANSWERED) host.answered?.(model.get(EDIT_ANSWERED));
        else if (traits.has(name)) host.modelChanged?.(name);
      }
    },
    receive: (message) => view.receive(message),
    destroy: () => view.destroy(),
  };
}

/** The view of a saved page's payload: the first kind that recognises it, else the array view, which says what is wrong. */
export function mountSaved(el: HTMLElement, payload: unknown): MountedView {
  const kind = Object.values(KINDS).find((k) => k.isPayload(payload)) ?? ARRAY;
  const host = kind.staticHost(payload);
  const view = new kind.View(el, host);
  if (isAnswering(host)) host.onChange((keys) => view.update(keys));
  return view;
}
