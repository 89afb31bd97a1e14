// Builds the front end into src/shardviz/static/ (gitignored):
//   widget.js      ESM, default export { render }, loaded by anywidget (_esm)
//   widget.css     the widget's styles, loaded by anywidget (_css)
//   standalone.js  minified IIFE with the CSS inlined, for exported HTML pages
// `node esbuild.mjs --watch` rebuilds on change.
import * as esbuild from "esbuild";

const outdir = "src/shardviz/static";
const common = { bundle: true, target: "es2020", logLevel: "info", legalComments: "none" };

const builds = [
  { ...common, entryPoints: ["js/widget.ts"], outfile: `${outdir}/widget.js`, format: "esm", minify: true },
  { ...common, entryPoints: ["js/widget.css"], outfile: `${outdir}/widget.css`, minify: true },
  {
    ...common,
    entryPoints: ["js/standalone.ts"],
    outfile: `${outdir}/standalone.js`,
    format: "iife",
    minify: true,
    loader: { ".css": "text" },
  },
];

if (process.argv.includes("--watch")) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
