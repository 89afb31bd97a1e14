/** The standalone bundle imports the widget's CSS as text (esbuild's "text" loader). */
declare module "*.css" {
  const css: string;
  export default css;
}
