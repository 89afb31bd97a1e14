/**
 * One text editor of a layout (a mesh, a spec, a rules line...): an input
 * that commits on Enter and reverts on Escape, with a reserved status line
 * under it for its error, a notice, what the typed edit would do, or a
 * request to confirm an edit that would move a lot of data.
 *
 * What the box shows after each answer from Python is decided in one place
 * (`sync`): Python's text, except that a text the user typed and Python
 * refused stays (with its error) so the typo can be fixed, and text being
 * typed in the focused box is never overwritten.
 */

import type { EditEstimate } from "../engine/array/estimate";
import { h, replaceChildren } from "../util/dom";
import { formatBytes } from "../util/ranges";

export interface TextEditorOptions {
  /** `data-role` of the input. */
  role: string;
  /** `data-source` of its errors (the error_source Python gives them). */
  source: string;
  label: string;
  placeholder: string;
  disabled: boolean;
  /** Python's text now (the synced trait). */
  current: () => string;
  /**
   * How the box shows Python's text (the spec editor writes a replicated spec,
   * Python's "", as `P()`); the box's text counts as Python's when it equals this.
   */
  shown?: (python: string) => string;
  /** Sends a text to Python. Called only from user events. */
  send: (text: string) => void;
  /**
   * True while an edit sent from this view awaits Python's answer: Python's
   * text is then about to become the one sent last, so a text equal to
   * Python's is sent unless it is that one (else a burst of edits could end
   * in an earlier edit).
   */
  inFlight?: () => boolean;
  /** What typing `text` would give each device; null when unknown. */
  estimate?: (text: string) => EditEstimate | null;
  /** True when an edit with this estimate must be confirmed first. */
  needsConfirmation?: (estimate: EditEstimate | null) => boolean;
  signal: AbortSignal;
}

/** What Python says about this editor after an answer. */
export interface EditorAnswer {
  /** The error of the last edit, when it belongs to this editor; "" otherwise. */
  error: string;
  /** A notice to show beside this editor ("" for none). */
  notice: string;
}

export class TextEditor {
  readonly input: HTMLInputElement;
  /** The label and the input, one row. */
  readonly field: HTMLElement;
  /** The reserved line under the field. */
  readonly status: HTMLElement;
  private readonly options: TextEditorOptions;
  /** The text this editor sent last, whatever became of it. */
  private lastSent: string | null = null;
  /** Text the user typed and sent; kept in the box while Python refuses it. */
  private sent: string | null = null;
  /** The user has typed since the box last showed Python's text or was sent. */
  private typed = false;
  /** Text waiting for a second Enter (or the Apply button) because it moves a lot of data. */
  private awaiting: string | null = null;
  private answer: EditorAnswer = { error: "", notice: "" };
  /** Escape put Python's text back over a refused text: its error no longer describes the box. */
  private dismissed = false;

  constructor(options: TextEditorOptions) {
    this.options = options;
    const { signal } = options;
    this.input = h("input", {
      type: "text",
      class: "sv-input",
      "data-role": options.role,
      placeholder: options.placeholder,
      spellcheck: "false",
      autocomplete: "off",
      "aria-label": options.label,
      disabled: options.disabled,
    });
    this.input.value = this.pythonShown();
    this.field = h("label", { class: "sv-field" }, [h("span", { class: "sv-label" }, [options.label]), this.input]);
    this.status = h("div", { class: "sv-status-line", "data-status-for": options.role });
    this.input.addEventListener(
      "input",
      () => {
        this.typed = true;
        if (this.awaiting !== this.input.value) this.awaiting = null;
        this.renderStatus();
      },
      { signal },
    );
    this.input.addEventListener(
      "keydown",
      (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          this.submit(this.input.value, "typed");
        } else if (event.key === "Escape") {
          // Escape belongs to the box: it must not also unpin the inspector or leave the notebook cell.
          event.preventDefault();
          event.stopPropagation();
          this.revert();
        }
      },
      { signal },
    );
    this.renderStatus();
  }

  /**
   * Sends `text` unless it needs confirming first. `typed` texts stay in the
   * box if Python refuses them; texts composed by other controls give way to
   * Python's text (those controls show Python's state themselves).
   */
  submit(text: string, origin: "typed" | "composed"): void {
    if (this.options.disabled) return;
    const estimate = this.options.estimate?.(text) ?? null;
    if (this.awaiting !== text && this.options.needsConfirmation?.(estimate)) {
      this.awaiting = text;
      this.input.value = text;
      this.typed = true;
      this.renderStatus();
      return;
    }
    this.awaiting = null;
    this.typed = false;
    this.dismissed = false;
    this.sent = origin === "typed" ? text : null;
    this.input.value = text;
    this.renderStatus();
    const current = this.options.current();
    const isPython = text === current || text === this.pythonShown();
    if (isPython) this.input.value = this.pythonShown();
    // While an edit is still to be answered, Python's text is about to become what was sent last:
    // Python's text now may be an earlier edit's, so only the text sent last is nothing new.
    const inFlight = this.options.inFlight?.() ?? false;
    if (!isPython || (inFlight && current !== this.lastSent)) {
      this.sendText(isPython ? current : text);
    } else if (this.answer.error) {
      // Python's own text again, after a refused edit: send it so that Python clears the error
      // (Python takes its own text as the refusal withdrawn and changes nothing else).
      this.sendText(current);
    }
  }

  private sendText(text: string): void {
    this.lastSent = text;
    this.options.send(text);
  }

  /** Python's text as the box shows it. */
  private pythonShown(): string {
    const current = this.options.current();
    return this.options.shown ? this.options.shown(current) : current;
  }

  /** True when the box holds Python's text (as Python writes it or as the box shows it). */
  private holdsPython(): boolean {
    const value = this.input.value;
    return value === this.options.current() || value === this.pythonShown();
  }

  /** Puts Python's text back and forgets any draft. */
  revert(): void {
    // The refused text leaves the box, and its error with it (the last good layout never changed).
    if (this.answer.error) this.dismissed = true;
    this.sent = null;
    this.typed = false;
    this.awaiting = null;
    this.input.value = this.pythonShown();
    this.renderStatus();
  }

  /** Shows Python's state after an answer (any trait change). */
  sync(answer: EditorAnswer): void {
    if (answer.error !== this.answer.error) this.dismissed = false; // a new error: show it
    this.answer = answer;
    const current = this.pythonShown();
    const typing = this.typed && this.input.ownerDocument.activeElement === this.input;
    if (answer.error && this.sent !== null) {
      // Refused: the box shows what the user sent (or their fix of it) beside its error. Python's
      // answer may arrive as several trait changes in any order, so the text is put back, not just kept.
      if (!this.typed) this.input.value = this.sent;
    } else if (!typing) {
      this.typed = false;
      this.awaiting = null;
      if (this.input.value !== current) this.input.value = current;
    }
    this.renderStatus();
  }

  /**
   * The error, if it describes the text in the box now: the refused text the
   * user sent (not their edit of it), or, for an edit no text of theirs
   * made, the box until they type or revert.
   */
  private errorForBox(): string {
    if (!this.answer.error || this.dismissed) return "";
    if (this.sent !== null) return this.input.value === this.sent ? this.answer.error : "";
    return this.typed && !this.holdsPython() ? "" : this.answer.error;
  }

  /** The reserved line: a confirmation request, else the error, else what the draft would do, else a notice. */
  private renderStatus(): void {
    const draft = this.input.value;
    const dirty = this.typed && !this.holdsPython();
    const error = this.errorForBox();
    if (error) this.input.setAttribute("aria-invalid", "true");
    else this.input.removeAttribute("aria-invalid");
    let content: HTMLElement | null = null;
    if (this.awaiting !== null && this.awaiting === draft) {
      content = this.confirmation(this.options.estimate?.(draft) ?? null);
    } else if (error) {
      content = h("div", { class: "sv-error", role: "alert", "data-source": this.options.source }, [error]);
    } else if (dirty) {
      const estimate = this.options.estimate?.(draft) ?? null;
      // After a refusal the hint says what was refused and what Esc goes back to, not only the keys.
      const refused = this.answer.error && !this.dismissed && this.sent !== null ? this.answer.error : "";
      content = h("div", { class: "sv-hint-line", "data-role": "draft-hint" }, [
        refused ? `${JSON.stringify(this.sent)} was refused: ${refused} \u00b7 ` : "",
        estimate ? `${shareText(estimate)} \u00b7 ` : "",
        `Enter applies, Esc reverts to ${JSON.stringify(this.pythonShown())}`,
      ]);
    } else if (this.answer.notice) {
      content = h("div", { class: "sv-notice", role: "status", "data-role": "notice" }, [this.answer.notice]);
    }
    replaceChildren(this.status, [content]);
  }

  private confirmation(estimate: EditEstimate | null): HTMLElement {
    const apply = h("button", { type: "button", class: "sv-button", "data-role": "confirm-edit" }, ["Apply"]);
    apply.addEventListener("click", () => this.submit(this.input.value, "typed"), { signal: this.options.signal });
    const growth = estimate && estimate.bytesNow > 0 ? Math.round(estimate.bytesAfter / estimate.bytesNow) : null;
    return h("div", { class: "sv-warning", role: "status", "data-role": "confirm" }, [
      estimate
        ? `Each device would hold ${formatBytes(estimate.bytesAfter)} (now ${formatBytes(estimate.bytesNow)}${
            growth ? `, ${growth}\u00d7` : ""
          }). Enter again or `
        : "This edit moves a lot of data. Enter again or ",
      apply,
      " to go ahead; Esc cancels.",
    ]);
  }
}

/** `per device: 4.0 KiB (now 512 B)`. */
export function shareText(estimate: EditEstimate): string {
  const after = formatBytes(estimate.bytesAfter);
  return estimate.bytesAfter === estimate.bytesNow
    ? `per device: ${after} (as now)`
    : `per device: ${after} (now ${formatBytes(estimate.bytesNow)})`;
}
