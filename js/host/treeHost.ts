/**
 * Hosts of the tree view: over a live model (a rules edit is answered in the
 * browser first, js/engine/tree/edits.ts, and by the kernel last; leaf layouts
 * can be asked for), and over a saved page's payload (rules answered in the
 * page when it was saved with none in force, else read-only).
 */

import type { AnyModel } from "@anywidget/types";
import { applyTreeRules } from "../engine/tree/edits";
import { isTreePayload, TREE_PAYLOAD_VERSION, type TreePayload } from "../payload/tree";
import type { EditNumbers } from "../traits/edits";
import { readOnlyHost } from "../traits/readOnly";
import type { LeafLayoutRequest, TreeHost, TreeTraits } from "../traits/tree";
import { LocalFirstHost } from "./localFirst";

/** A tree widget's model: its traits and the edit numbers every view's edits carry. */
export type TreeModel = AnyModel<TreeTraits & EditNumbers>;

const ANSWERED: readonly (keyof TreeTraits)[] = ["payload", "rules_text", "error", "error_source", "notice"];

/** The live tree host: rules answered locally from the tree as given, the kernel's answer last. */
export class TreeLiveHost extends LocalFirstHost<TreeTraits, keyof TreeTraits> implements TreeHost {
  /** The payload of the tree as the widget was given it (the rules apply to it), once the kernel has shown it. */
  private original: TreePayload | null = null;

  constructor(model: TreeModel) {
    super(model, {
      answeredKeys: ANSWERED,
      comparedKeys: ANSWERED,
      disagreement: "shardviz: the rules applied in the browser differ from the kernel's; the kernel's answer stays.",
      answer: (get, _key, value) => this.answer(get, value),
      announceKernelAnswers: true,
    });
    this.remember();
  }

  override modelChanged(key: keyof TreeTraits): void {
    if (key === "payload" || key === "rules_text") this.remember();
    super.modelChanged(key);
  }

  readonly send = (message: LeafLayoutRequest): void => this.model.send(message);

  /** The kernel's payload with no rules in force is the tree as given: the base of every rules edit. */
  private remember(): void {
    const payload = this.modelValue("payload");
    if (isTreePayload(payload) && this.modelValue("rules_text") === "" && !payload.rules_text) this.original = payload;
  }

  private answer(get: <K extends keyof TreeTraits>(key: K) => TreeTraits[K], text: string): TreeTraits | null {
    const shown = get("payload");
    if (!isTreePayload(shown) || shown.version !== TREE_PAYLOAD_VERSION) return null;
    const current = { payload: shown, rules_text: get("rules_text"), notice: get("notice") };
    // The rules in force again (after a refusal): Python withdraws the refusal and keeps the rest.
    if (text === current.rules_text) return { ...current, error: "", error_source: "" };
    if (this.original === null) return null;
    const outcome = applyTreeRules(this.original, text);
    if (outcome.status === "kernel-only") return null;
    if (outcome.status === "refused") {
      return { ...current, error: outcome.message, error_source: outcome.source, notice: "" };
    }
    return { payload: outcome.payload, rules_text: text, error: "", error_source: "", notice: outcome.notice };
  }
}

export function modelTreeHost(model: TreeModel): TreeHost {
  return new TreeLiveHost(model);
}

export const SAVED_PAGE_NOTE =
  "Saved page, no kernel: the rules in force are shown; applying new ones needs a live kernel.";
const PLACEHOLDER_TREE = "TREE";
export const TREE_PAGE_NOTE =
  "Computed in this page, no kernel: rules re-shard the tree as it was saved (one GLOB = SPEC per line).";

/**
 * A saved page of a tree with no rules in force: every rules edit is answered
 * in the page (js/engine/tree/edits.ts), what needs JAX is refused beside the
 * editor, and the last good picture stays.
 */
export class TreePageHost implements TreeHost {
  readonly readOnly = false;
  readonly note = TREE_PAGE_NOTE;
  private readonly original: TreePayload;
  private readonly traits: TreeTraits;
  private listener: ((keys: (keyof TreeTraits)[]) => void) | null = null;

  constructor(payload: TreePayload) {
    this.original = payload;
    this.traits = { payload, error: "", error_source: "", notice: "", rules_text: "" };
  }

  /** Called with the traits an edit changed (the view's `update`). */
  onChange(listener: (keys: (keyof TreeTraits)[]) => void): void {
    this.listener = listener;
  }

  get<K extends keyof TreeTraits>(key: K): TreeTraits[K] {
    return this.traits[key];
  }

  edit(_key: "rules_text", value: string): void {
    // A saved tree has no variable name: the copy code says TREE, as Python's does for an unnamed tree.
    const outcome = applyTreeRules(this.original, value, this.original.code_tree ?? PLACEHOLDER_TREE);
    if (outcome.status === "applied") {
      Object.assign(this.traits, { payload: outcome.payload, rules_text: value, error: "", error_source: "" });
      this.traits.notice = outcome.notice;
    } else {
      this.traits.error = outcome.status === "refused" ? outcome.message : outcome.reason;
      this.traits.error_source = "rules";
      this.traits.notice = "";
    }
    this.listener?.(["payload", "rules_text", "error", "error_source", "notice"]);
  }
}

/** A saved page's host: rules applied in the page when it was saved with none in force, else read-only. */
export function staticTreeHost(payload: TreePayload): TreeHost {
  if (isTreePayload(payload) && payload.version === TREE_PAYLOAD_VERSION && !payload.rules_text) {
    return new TreePageHost(payload);
  }
  const traits: TreeTraits = {
    payload,
    error: "",
    error_source: "",
    notice: "",
    rules_text: payload.rules_text ?? "",
  };
  return readOnlyHost(traits, SAVED_PAGE_NOTE);
}
