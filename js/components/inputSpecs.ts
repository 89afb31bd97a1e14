/**
 * The program's inputs and outputs with their types, and one spec editor per
 * array input. An editor commits on Enter (Escape puts Python's text back);
 * the view sends every input's spec text, Python's for the others, as the
 * `input_specs` trait, and Python re-traces. After each answer an editor
 * shows Python's text (the payload's `spec_text`), except that a text it
 * sent and Python refused stays, with the error beside it, so it can be
 * fixed. Errors of input k (`error_source` `input:k`) show under its editor.
 * While Python works on an edit the editor says so.
 */

import type { Program, WhatIfInfo } from "../payload/program";
import { h, replaceChildren } from "../util/dom";
import { shownSpecText } from "./compose";
import {
  foldRows,
  type IoSelection,
  inputRow,
  ioTable,
  markSelectedRow,
  outputRow,
  specInput,
  statusContent,
  typeCell as typeCellOf,
} from "./ioTable";

export interface InputSpecsOptions {
  readOnly: boolean;
  /** Why nothing can be edited here (a saved page), shown above the editors. */
  note?: string;
  /** A spec text in canonical form (as Python writes it back), or null when it does not parse. */
  canonical: (text: string) => string | null;
  /** Sends one spec text per array input. Called only from user events. */
  send: (specs: string[]) => void;
  /** True while an edit sent from this view awaits Python's answer (which may change Python's specs). */
  inFlight?: () => boolean;
  onSelectInput: (k: number) => void;
  onSelectOutput: (k: number) => void;
  signal: AbortSignal;
}

/** Python's state after an answer. */
export interface InputsAnswer {
  error: string;
  errorSource: string;
}

interface Editor {
  input: HTMLInputElement;
  status: HTMLElement;
  /** Text this editor sent, kept while Python refuses it. */
  sent: string | null;
  /** The user typed since the box last showed Python's text or sent. */
  typed: boolean;
  /** Python refused this editor's edit (its error, or a program error after its edit). */
  refused: boolean;
  /** Escape put Python's text back over the refused text: the error no longer describes the box. */
  dismissed: boolean;
}

/** What an edit does on a what-if mesh, which this machine's devices cannot hold. */
export function whatifEditText(whatif: WhatIfInfo): string {
  return `A what-if mesh of ${whatif.devices} devices: an edit traces the program again in a child Python with ${whatif.devices} simulated CPU devices (the last trace took ${whatif.child_seconds.toFixed(1)} s).`;
}

export { IO_ROWS_SHOWN, type IoSelection } from "./ioTable";

export class InputSpecs {
  readonly element: HTMLElement;
  private readonly options: InputSpecsOptions;
  private readonly inputsBody = h("tbody");
  private readonly outputsBody = h("tbody");
  /** On a what-if mesh, says that an edit traces again in a child process (and how long the last took). */
  private readonly whatifNote = h("p", { class: "sv-note", "data-role": "whatif-note", hidden: true });
  /** Why the editors are read-only for a program that cannot be traced again (payload `retrace_reason`). */
  private readonly retraceNote = h("p", { class: "sv-note", "data-role": "retrace-note", hidden: true });
  private editors: Editor[] = [];
  private program: Program | null = null;
  private rowsKey = "";
  private answer: InputsAnswer = { error: "", errorSource: "" };
  /** The editor whose edit Python is answering now (-1: none). */
  private pending = -1;
  /** The specs this view sent last, whatever became of them. */
  private lastSent: string[] | null = null;
  /** The editor that sent the last edit (its text stays while a program error shows). */
  private lastSender = -1;
  /** Inputs' and outputs' rows past the first few were asked for. */
  private readonly unfolded = { input: false, output: false };

  constructor(options: InputSpecsOptions) {
    this.options = options;
    const { signal } = options;
    this.element = h("div", { class: "sv-io", "data-role": "inputs" }, [
      options.readOnly ? h("p", { class: "sv-note", "data-role": "read-only-note" }, [options.note ?? ""]) : null,
      this.whatifNote,
      this.retraceNote,
      ioTable(this.inputsBody, this.outputsBody),
    ]);
    this.element.addEventListener(
      "click",
      (event) => {
        const more = (event.target as Element | null)?.closest?.("[data-role='more-rows']");
        if (more) {
          const kind = more.getAttribute("data-rows") === "output" ? "output" : "input";
          this.unfold(kind);
          return;
        }
        const button = (event.target as Element | null)?.closest?.("[data-io]");
        if (!button) return;
        const k = Number(button.getAttribute("data-index"));
        if (button.getAttribute("data-io") === "input") options.onSelectInput(k);
        else options.onSelectOutput(k);
      },
      { signal },
    );
  }

  /** Python's text for input k now. */
  private python(k: number): string {
    return this.program?.payload.inputs[k]?.spec_text ?? "";
  }

  /** No edit can be sent: the view is read-only, or the program cannot be traced again. */
  private locked(): boolean {
    return this.options.readOnly || this.program?.payload.retrace === false;
  }

  setProgram(program: Program): void {
    this.program = program;
    const { inputs, outputs, whatif } = program.payload;
    const cannotRetrace = !this.options.readOnly && program.payload.retrace === false;
    this.retraceNote.textContent = cannotRetrace ? (program.payload.retrace_reason ?? "") : "";
    this.retraceNote.hidden = this.retraceNote.textContent === "";
    this.whatifNote.textContent = whatif && !this.locked() ? whatifEditText(whatif) : "";
    this.whatifNote.hidden = this.whatifNote.textContent === "";
    const key = JSON.stringify([inputs.map((i) => i.path), outputs.map((o) => o.path)]);
    const typeCell = (t: number): HTMLElement => typeCellOf(program, t);
    if (key !== this.rowsKey) {
      this.rowsKey = key;
      this.pending = -1;
      this.lastSender = -1;
      this.editors = inputs.map((entry, k) => this.editor(entry.path, k));
      replaceChildren(
        this.inputsBody,
        inputs.map((entry, k) => inputRow(k, entry.path, typeCell(entry.type), this.editors[k])),
      );
    } else {
      Array.from(this.inputsBody.querySelectorAll(":scope > [data-input-row]")).forEach((row, k) => {
        row.children[1].replaceWith(typeCell(inputs[k].type));
      });
    }
    replaceChildren(
      this.outputsBody,
      outputs.map((entry, k) => outputRow(program, k, entry.path, typeCell(entry.type))),
    );
    if (inputs.length === 0) {
      this.inputsBody.append(h("tr", {}, [h("td", { colspan: 3, class: "sv-muted" }, ["No array inputs."])]));
    }
    for (const editor of this.editors) editor.input.disabled = this.locked();
    this.fold("input");
    this.fold("output");
  }

  /**
   * Shows Python's state. Python's answer to an edit arrives as several trait
   * changes, then `answered` (the view passes true once Python says it has
   * answered the edit): until then the editors' texts are left alone.
   */
  sync(answer: InputsAnswer, answered = false): void {
    this.answer = answer;
    if (answered) this.pending = -1;
    if (this.pending >= 0) {
      this.editors.forEach((_, k) => {
        this.renderStatus(k);
      });
      return;
    }
    this.editors.forEach((editor, k) => {
      const python = this.python(k);
      const mine = this.errorFor(k);
      const refused =
        answer.error !== "" && (mine !== "" || (answer.errorSource === "program" && k === this.lastSender));
      const typing = editor.typed && editor.input.ownerDocument.activeElement === editor.input;
      if (refused !== editor.refused || !refused) editor.dismissed = false;
      editor.refused = refused;
      if (refused && editor.sent !== null) {
        if (!editor.typed) editor.input.value = editor.sent;
      } else if (!typing) {
        editor.typed = false;
        editor.sent = null;
        if (editor.input.value !== shownSpecText(python)) editor.input.value = shownSpecText(python);
      }
      this.renderStatus(k);
    });
  }

  setSelected(selection: IoSelection): void {
    if (selection) {
      const row = this.bodyOf(selection.kind).children[selection.index] as HTMLElement | undefined;
      if (row?.hidden) this.unfold(selection.kind);
    }
    markSelectedRow(this.element, selection);
  }

  private bodyOf(kind: "input" | "output"): HTMLElement {
    return kind === "input" ? this.inputsBody : this.outputsBody;
  }

  /** Hides rows past the first few behind a "show all" row, unless they were asked for. */
  private fold(kind: "input" | "output"): void {
    foldRows(this.bodyOf(kind), kind, !this.unfolded[kind]);
  }

  private unfold(kind: "input" | "output"): void {
    this.unfolded[kind] = true;
    this.fold(kind);
  }

  private errorFor(k: number): string {
    return this.answer.error && this.answer.errorSource === `input:${k}` ? this.answer.error : "";
  }

  private editor(path: string, k: number): Editor {
    const { signal, readOnly } = this.options;
    const input = specInput(path, k, readOnly);
    input.value = shownSpecText(this.python(k));
    const status = h("div", { class: "sv-status-line", "data-status-for": `input:${k}` });
    const editor: Editor = { input, status, sent: null, typed: false, refused: false, dismissed: false };
    input.addEventListener(
      "input",
      () => {
        editor.typed = true;
        this.renderStatus(k);
      },
      { signal },
    );
    input.addEventListener(
      "keydown",
      (event) => {
        if (event.key === "Enter") {
          event.preventDefault();
          this.submit(k);
        } else if (event.key === "Escape") {
          // Escape belongs to the box: it must not also clear the view's selection or leave the cell.
          event.preventDefault();
          event.stopPropagation();
          editor.typed = false;
          editor.sent = null;
          editor.dismissed = editor.refused;
          input.value = shownSpecText(this.python(k));
          this.renderStatus(k);
        }
      },
      { signal },
    );
    return editor;
  }

  private submit(k: number): void {
    if (this.locked() || !this.program) return;
    const editor = this.editors[k];
    const text = editor.input.value;
    const python = this.python(k);
    const same = text === python || text === shownSpecText(python) || this.options.canonical(text) === python;
    editor.typed = false;
    // While an edit is still to be answered, Python's specs are about to become those sent last:
    // Python's spec now may be an earlier edit's, so only the spec sent last is nothing new.
    const settled = this.options.inFlight?.() ? (this.lastSent?.[k] ?? python) : python;
    if (same && settled === python && !this.answer.error) {
      // Python's own spec, written another way: nothing to trace again.
      editor.sent = null;
      editor.input.value = shownSpecText(python);
      this.renderStatus(k);
      return;
    }
    const specs = this.program.payload.inputs.map((_, j) => this.python(j));
    // Python's own spec again after a refusal: sent as it is; Python takes its own specs as the
    // refusal withdrawn and clears the error without tracing again.
    specs[k] = same && (text === python || text === shownSpecText(python)) ? python : text;
    editor.sent = same ? null : text;
    editor.dismissed = false;
    this.pending = k;
    this.lastSender = k;
    this.renderStatus(k);
    this.lastSent = specs;
    this.options.send(specs);
  }

  /**
   * Whether Python's refusal describes the text in box k now: the refused text
   * itself (not the user's edit of it, nor Python's text put back by Escape).
   */
  private refusalShown(k: number): boolean {
    const editor = this.editors[k];
    if (!editor.refused || editor.dismissed) return false;
    if (editor.sent !== null) return editor.input.value === editor.sent;
    const value = editor.input.value;
    return !(editor.typed && value !== this.python(k) && value !== shownSpecText(this.python(k)));
  }

  private renderStatus(k: number): void {
    const editor = this.editors[k];
    const shown = this.pending !== k && this.refusalShown(k);
    const error = shown ? this.errorFor(k) : "";
    if (shown) editor.input.setAttribute("aria-invalid", "true");
    else editor.input.removeAttribute("aria-invalid");
    const value = editor.input.value;
    const dirty = editor.typed && value !== this.python(k) && value !== shownSpecText(this.python(k));
    replaceChildren(editor.status, [statusContent(k, this.pending === k, error, dirty)]);
  }
}
