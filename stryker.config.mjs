// `make mutate-js` (docs/mutation.md): Stryker on the TypeScript engine and the hosts, each mutant
// run against the Vitest tests that reach it. `make mutate-js JS=js/engine/estimate.ts` narrows it.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.config.ts" },
  mutate: ["js/engine/**/*.ts", "js/host/**/*.ts", "!js/**/*.test.ts"],
  // Only the front end and its fixtures go into Stryker's sandbox, not the Python side.
  ignorePatterns: ["/.venv", "/build", "/src", "/tests", "/notebooks", "/benchmarks", "/docs", "/_site", "/tools", "/.stamps"],
  coverageAnalysis: "perTest",
  concurrency: 2,
  timeoutMS: 20000,
  tempDirName: "build/stryker-tmp",
  incremental: true,
  incrementalFile: "build/stryker/incremental.json",
  reporters: ["clear-text", "progress", "html", "json"],
  htmlReporter: { fileName: "build/stryker/report.html" },
  jsonReporter: { fileName: "build/stryker/report.json" },
  thresholds: { high: 85, low: 70, break: null },
};
