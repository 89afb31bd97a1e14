/** Kept for older imports: the traits now live in js/traits/program.ts. */
export * from "../traits/program";
