// `make mutate-js` (docs/mutation.md): Stryker on the TypeScript engine and the hosts, each mutant
// run against the Vitest tests that reach it. `make mutate-js JS=js/engine/estimate.ts` narrows it.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.stryker.config.ts" },
  mutate: ["js/engine/**/*.ts", "js/host/**/*.ts", "!js/**/*.test.ts"],
  // Only the front end and its fixtures go into Stryker's sandbox, not the Python side.
  ignorePatterns: ["/.venv", "/build", "/src", "/tests", "/notebooks", "/benchmarks", "/docs", "/_site", "/tools", "/.stamps"],
  coverageAnalysis: "perTest",
  // Stryker rewrites the tsconfig's paths for its sandbox through TypeScript's JavaScript API, which TypeScript 7
  // no longer has; ours has no extends or references to rewrite, so it names a file that does not exist.
  tsconfigFile: "no-tsconfig-rewrite.json",
  // One mutant at a time: the development machine has 2 cores shared by several engineers.
  concurrency: 1,
  // A static mutant (module-level tables and constants) reruns every related test file; these are skipped and
  // reported as ignored so a run stays within hours on a shared machine.
  ignoreStatic: true,
  timeoutMS: 20000,
  // The first run, with Stryker's counters in every mutated file, replays the parity cases on a loaded machine.
  dryRunTimeoutMinutes: 30,
  tempDirName: "build/stryker-tmp",
  incremental: true,
  incrementalFile: "build/stryker/incremental.json",
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "build/stryker/report.html" },
  jsonReporter: { fileName: "build/stryker/report.json" },
  thresholds: { high: 85, low: 70, break: null },
};
