/**
 * The rules editor: `GLOB = SPEC`, one rule per line, committed with
 * Ctrl+Enter (Cmd+Enter on a Mac) or the Apply button, never while typing.
 * Python answers with the rules in force: a refused edit puts the last good
 * rules back in the trait, yet the editor keeps the user's refused text (to
 * fix it) beside the error, which names its line; the picture stays the last
 * good one. The notice says what the last good edit did.
 */

import { h, replaceChildren } from "../util/dom";

export interface RulesEditorOptions {
  /** No kernel to apply rules: the editor shows the rules in force, disabled. */
  readOnly: boolean;
  /** Why it is read-only, or how edits are worked out (shown above the editor). */
  note?: string;
  onCommit: (text: string) => void;
  /** True while an edit sent from this view awaits the kernel's answer (which may change the rules in force). */
  inFlight?: () => boolean;
  signal: AbortSignal;
}

const PLACEHOLDER = "layers.*.w = None, model\n*embed = model, data";

/** The line an error names (`line 3: ...`), or null. */
export function errorLine(error: string): number | null {
  const match = /^line (\d+)\b/.exec(error);
  return match ? Number(match[1]) : null;
}

export class RulesEditor {
  readonly element: HTMLElement;
  readonly input: HTMLTextAreaElement;
  private readonly options: RulesEditorOptions;
  private readonly alertSlot = h("div", { class: "sv-alert-slot" });
  private readonly noticeSlot = h("p", { class: "sv-notice", role: "status", "data-role": "notice" });
  /** The text the editor last took from Python. */
  private base = "";
  /** The text of the last commit, until Python takes it (null once it has). */
  private sent: string | null = null;
  /** A commit whose error has not arrived yet: its text stays while Python puts the old rules back. */
  private awaiting = false;
  /** The text this editor sent last, whatever became of it. */
  private lastSent: string | null = null;
  private errorShown = false;

  constructor(options: RulesEditorOptions) {
    this.options = options;
    const { signal, readOnly } = options;
    this.input = h("textarea", {
      class: "sv-input sv-rules-input",
      "data-role": "rules-input",
      rows: 4,
      spellcheck: "false",
      autocomplete: "off",
      placeholder: readOnly ? "(no rules)" : PLACEHOLDER,
      "aria-label": "sharding rules, one GLOB = SPEC per line",
      disabled: readOnly,
    });
    const apply = h("button", { type: "button", class: "sv-button", "data-role": "rules-apply", disabled: readOnly }, [
      "Apply rules",
    ]);
    apply.title = "Apply the rules (Ctrl+Enter, or Cmd+Enter on a Mac)";
    apply.addEventListener("click", () => this.commit(), { signal });
    this.input.addEventListener(
      "keydown",
      (event) => {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          this.commit();
        }
      },
      { signal },
    );
    this.input.addEventListener("input", () => this.input.removeAttribute("aria-invalid"), { signal });
    this.element = h("section", { class: "sv-rules", "aria-label": "Sharding rules" }, [
      h("p", { class: "sv-note" }, [
        options.note ??
          (readOnly
            ? "Editing rules needs a live kernel."
            : "One GLOB = SPEC per line: the first rule whose glob matches a leaf's path sets its spec; other leaves keep theirs."),
      ]),
      this.input,
      h("div", { class: "sv-rules-bar" }, [apply, h("span", { class: "sv-muted" }, ["Ctrl+Enter applies"])]),
      this.alertSlot,
      this.noticeSlot,
    ]);
  }

  /** Sends the text to Python (nothing happens without a kernel). */
  commit(): void {
    if (this.options.readOnly) return;
    const text = this.input.value;
    // The rules in force (or those on their way), with no error showing: there is nothing to apply.
    // While an edit is still to be answered, the rules are about to become those sent last.
    const settled = this.options.inFlight?.() ? this.lastSent : this.base;
    if (text === settled && !this.errorShown) return;
    this.lastSent = text;
    this.sent = text;
    this.awaiting = true;
    this.options.onCommit(text);
  }

  /**
   * Takes the traits after a change: the rules in force, and the error if
   * the last edit was refused. `answered` says the change holds part of
   * Python's answer (a new payload, notice or error); a change of the rules
   * alone may be the model echoing our own edit. A refused edit's rules and
   * its error arrive in separate messages; until the answer says how it
   * went, and while its error stands, the text the user sent stays.
   */
  sync(rulesText: string, error: string, answered: boolean): void {
    if (answered) this.awaiting = false;
    const value = this.input.value;
    if (value !== this.base && value !== this.sent) return; // the user is typing
    // Any error refuses the edit: the tree view edits nothing else.
    const refused = error !== "";
    if (this.sent !== null && value === this.sent) {
      if (refused) return; // the refused text stays beside its error, to be fixed
      if (this.awaiting && rulesText !== this.sent) return; // the answer is on its way
    }
    if (value !== rulesText) this.input.value = rulesText;
    this.base = rulesText;
    if (!refused && !this.awaiting && rulesText === this.sent) this.sent = null;
  }

  /** Shows the error beside the editor (`role="alert"`, `data-source="rules"`, or `general` for an unreadable edit). */
  showError(error: string, errorSource: string): void {
    this.errorShown = error !== "";
    replaceChildren(this.alertSlot, []);
    this.input.removeAttribute("aria-invalid");
    if (!error) return;
    // The rules are the only thing edited here; an error whose source has not arrived yet is theirs.
    const source = errorSource === "general" ? "general" : "rules";
    const line = errorLine(error);
    const alert = h("div", { class: "sv-error", role: "alert", "data-source": source }, [error]);
    if (line !== null) alert.setAttribute("data-line", String(line));
    this.alertSlot.append(alert);
    if (source === "rules") this.input.setAttribute("aria-invalid", "true");
    if (line !== null && this.input.ownerDocument.activeElement === this.input) this.selectLine(line);
  }

  /** Selects line `line` (1-based) of the text, so the user lands on what to fix. */
  private selectLine(line: number): void {
    const lines = this.input.value.split("\n");
    if (line > lines.length) return;
    const start = lines.slice(0, line - 1).reduce((sum, text) => sum + text.length + 1, 0);
    this.input.setSelectionRange(start, start + lines[line - 1].length);
  }

  showNotice(notice: string): void {
    this.noticeSlot.textContent = notice;
  }
}
