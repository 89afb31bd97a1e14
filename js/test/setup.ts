// jsdom has no canvas backend and logs "not implemented" for getContext;
// the canvas paths already handle a missing context, so say so quietly.
import { afterEach } from "vitest";

HTMLCanvasElement.prototype.getContext = (() => null) as typeof HTMLCanvasElement.prototype.getContext;

afterEach(() => {
  document.body.textContent = "";
});
