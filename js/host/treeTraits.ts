/** Kept for older imports: the traits now live in js/traits/tree.ts. */
export * from "../traits/tree";
