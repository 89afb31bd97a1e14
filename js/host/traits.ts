/** Kept for older imports: the traits now live in js/traits/array.ts. */
export * from "../traits/array";
