/**
 * LiveHost on its own, over a stand-in kernel link and a stand-in engine: the
 * protocol of docs/payload.md step by step (numbered edits out, the kernel's
 * answer wins once it has answered every edit sent). The traits are one
 * number and its text; every expected value is written out by hand.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ANSWERED, type Answer } from "../traits/host";
import { type KernelLink, LiveHost, type LocalEngine, SEND_IDLE_MS, SEND_WAIT_MS } from "./live";

interface Traits {
  payload: { value: number };
  error: string;
  error_source: string;
  notice: string;
  value_text: string;
}

class FakeLink implements KernelLink {
  current: Partial<Answer>;
  sent: object[] = [];
  private seq = 0;
  constructor(value: number) {
    this.current = answerOf(0, value);
  }
  answer(): Partial<Answer> {
    return this.current;
  }
  send(message: object): void {
    this.sent.push(message);
  }
  nextSeq(): number {
    this.seq += 1;
    return this.seq;
  }
}

function answerOf(seq: number, value: number, notice = ""): Partial<Answer> {
  return { seq, payload: { value }, error: "", error_source: "", notice, texts: { value_text: String(value) } };
}

function traitsOf(value: number, notice = ""): Traits {
  return { payload: { value }, error: "", error_source: "", notice, value_text: String(value) };
}

/** Predicts `value_text = n` as the kernel would; "k" is left to the kernel; "3" is predicted wrong (as 30). */
function engine(): LocalEngine<Traits> & { heardValues: number[]; asked: string[] } {
  const heardValues: number[] = [];
  const asked: string[] = [];
  return {
    heardValues,
    asked,
    compared: ["payload", "notice"],
    answer(_shown, _control, text) {
      asked.push(String(text));
      if (text === "k") return null;
      const value = text === "3" ? 30 : Number(text);
      return { payload: { value }, error: "", error_source: "", value_text: String(text) } as Traits;
    },
    heard(kernel) {
      heardValues.push(kernel.payload.value);
    },
  };
}

describe("LiveHost", () => {
  let warn: ReturnType<typeof vi.spyOn>;
  beforeEach(() => {
    warn = vi.spyOn(console, "warn").mockImplementation(() => {});
  });
  afterEach(() => {
    warn.mockRestore();
    vi.unstubAllGlobals();
    vi.useRealTimers();
  });

  it("starts from the kernel's answer with nothing in flight, with or without an engine", () => {
    const link = new FakeLink(4);
    const bare = new LiveHost<Traits, "value_text">(link);
    expect(bare.get("payload")).toEqual({ value: 4 });
    expect(bare.get("value_text")).toBe("4");
    expect(bare.editsInFlight()).toBe(false);
    bare.answered(); // a cell's change: no engine to tell
    expect(bare.get("payload")).toEqual({ value: 4 });
    const predicting = engine();
    new LiveHost<Traits, "value_text">(link, predicting);
    expect(predicting.heardValues).toEqual([4]);
  });

  it("passes request messages to the kernel as they are", () => {
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text", { ask: number }>(link);
    const send = host.send;
    send({ ask: 2 });
    expect(link.sent).toEqual([{ ask: 2 }]);
  });

  it("sends an edit nothing here predicts at once, and waits for the kernel's answer", () => {
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link);
    const heard: string[][] = [];
    host.onChange((keys) => heard.push(keys));
    host.edit("value_text", "5");
    expect(link.sent).toEqual([{ type: "edit", seq: 1, control: "value_text", text: "5" }]);
    expect(host.editsInFlight()).toBe(true);
    expect(heard).toEqual([]);
    link.current = answerOf(1, 5, "set");
    host.answered();
    expect(host.editsInFlight()).toBe(false);
    expect(heard).toEqual([["payload", "notice", "value_text", ANSWERED]]);
    expect(host.get("notice")).toBe("set");
  });

  it("draws a prediction at once, sends it after its frame (or after the wait on a hidden page), once", () => {
    vi.useFakeTimers();
    vi.stubGlobal("requestAnimationFrame", () => 0); // a hidden page: no frame comes
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    const heard: string[][] = [];
    host.onChange((keys) => heard.push(keys));
    host.edit("value_text", "6");
    expect(heard).toEqual([["payload", "notice", "value_text"]]);
    expect(host.get("payload")).toEqual({ value: 6 });
    expect(link.sent).toEqual([]);
    vi.advanceTimersByTime(SEND_WAIT_MS - 1);
    expect(link.sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(link.sent).toEqual([{ type: "edit", seq: 1, control: "value_text", text: "6" }]);
    vi.runAllTimers();
    expect(link.sent).toHaveLength(1);
  });

  it("sends a prediction after the frame that draws it, and only once", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "requestAnimationFrame"] });
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    host.edit("value_text", "6");
    expect(link.sent).toEqual([]);
    vi.advanceTimersByTime(20); // one frame, then its task
    expect(link.sent).toHaveLength(1);
    vi.advanceTimersByTime(SEND_WAIT_MS);
    expect(link.sent).toHaveLength(1);
  });

  it("sends a prediction once the browser is idle after its frame, within SEND_IDLE_MS", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "requestAnimationFrame"] });
    const idle: { run: () => void; timeout: number | undefined }[] = [];
    vi.stubGlobal("requestIdleCallback", (run: () => void, options?: { timeout?: number }) => {
      idle.push({ run, timeout: options?.timeout });
      return idle.length;
    });
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    host.edit("value_text", "6");
    expect(idle).toEqual([]); // nothing waits for idleness before the frame
    vi.advanceTimersByTime(20); // the frame, and the tasks after it
    expect(link.sent).toEqual([]);
    expect(idle.map((i) => i.timeout)).toEqual([SEND_IDLE_MS]);
    idle[0].run();
    expect(link.sent).toEqual([{ type: "edit", seq: 1, control: "value_text", text: "6" }]);
    vi.advanceTimersByTime(SEND_WAIT_MS);
    expect(link.sent).toHaveLength(1);
  });

  it("sends at once where there are no frames at all", () => {
    vi.stubGlobal("requestAnimationFrame", undefined);
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    host.edit("value_text", "6");
    expect(link.sent).toEqual([{ type: "edit", seq: 1, control: "value_text", text: "6" }]);
  });

  it("keeps later predictions in front until the kernel has answered every edit", () => {
    vi.stubGlobal("requestAnimationFrame", undefined);
    const link = new FakeLink(4);
    const predicting = engine();
    const host = new LiveHost<Traits, "value_text">(link, predicting);
    const heard: string[][] = [];
    host.onChange((keys) => heard.push(keys));
    host.edit("value_text", "5");
    host.edit("value_text", "6");
    expect(link.sent.map((m) => (m as { seq: number }).seq)).toEqual([1, 2]);
    heard.length = 0;
    link.current = answerOf(1, 5);
    host.answered();
    expect(predicting.heardValues).toEqual([4, 5]);
    expect(host.get("payload")).toEqual({ value: 6 }); // edit 2's prediction stays in front
    expect(host.editsInFlight()).toBe(true);
    expect(heard).toEqual([[ANSWERED]]);
    link.current = answerOf(2, 6);
    host.answered();
    expect(host.editsInFlight()).toBe(false);
    expect(host.get("payload")).toEqual({ value: 6 });
    expect(warn).not.toHaveBeenCalled();
  });

  it("hears a cell's change without an edit as no answer", () => {
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    const heard: string[][] = [];
    host.onChange((keys) => heard.push(keys));
    link.current = answerOf(0, 9);
    host.answered();
    expect(heard).toEqual([["payload", "value_text"]]);
    host.answered(); // the same answer again: nothing changed, nothing to hear
    expect(heard).toHaveLength(1);
  });

  it("logs a wrong prediction, and the edits predicted after it wait for the kernel", () => {
    vi.stubGlobal("requestAnimationFrame", undefined);
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    host.edit("value_text", "3"); // predicted as 30
    host.edit("value_text", "7");
    expect(host.get("payload")).toEqual({ value: 7 });
    link.current = answerOf(1, 3);
    host.answered();
    expect(warn).toHaveBeenCalledWith(
      "shardviz: the browser's answer differs from the kernel's; the kernel's answer stays.",
      {
        edit: { value_text: "3" },
        browser: { payload: { value: 30 }, error: "", error_source: "", value_text: "3" },
        kernel: traitsOf(3),
      },
    );
    expect(host.get("payload")).toEqual({ value: 3 }); // edit 2's prediction started from the wrong one
    expect(host.editsInFlight()).toBe(true);
  });

  it("takes a missing compared trait as empty on either side", () => {
    vi.stubGlobal("requestAnimationFrame", undefined);
    const link = new FakeLink(4);
    const host = new LiveHost<Traits, "value_text">(link, engine());
    host.edit("value_text", "5"); // the prediction carries no notice; the kernel's is ""
    link.current = answerOf(1, 5);
    host.answered();
    expect(warn).not.toHaveBeenCalled();
  });

  it("predicts nothing behind an edit only the kernel can answer", () => {
    vi.stubGlobal("requestAnimationFrame", undefined);
    const link = new FakeLink(4);
    const predicting = engine();
    const host = new LiveHost<Traits, "value_text">(link, predicting);
    host.edit("value_text", "k");
    host.edit("value_text", "5");
    expect(predicting.asked).toEqual(["k"]);
    expect(host.get("payload")).toEqual({ value: 4 });
    expect(link.sent).toHaveLength(2);
  });
});
