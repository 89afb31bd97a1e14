import { defineConfig } from "vitest/config";

// Stryker's tests (stryker.config.mjs): the engine's and the hosts' own tests. The view tests reach the engine
// too, but each takes seconds to draw in jsdom, and Stryker runs every test that reaches a mutant for each one;
// a score measured without them is a lower bound. Stryker's counters slow the parity replays several times over,
// hence the longer timeout (Stryker times each mutant out by its own clock from the first run).
export default defineConfig({
  test: {
    include: ["js/engine/**/*.test.ts", "js/host/**/*.test.ts"],
    environment: "jsdom",
    setupFiles: ["js/test/setup.ts"],
    testTimeout: 600_000,
  },
});
