import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["js/**/*.test.ts"],
    environment: "jsdom",
    setupFiles: ["js/test/setup.ts"],
    // The parity and view tests replay hundreds of edits in jsdom; a busy 2-core machine needs more than
    // the default 5 s for them. No test asserts a time.
    testTimeout: 60_000,
  },
});
