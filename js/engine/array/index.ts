/**
 * The layout engine in the browser: a pure port of the Python array engine
 * (no DOM, no model). `applyEdit` answers an edit from the current payload
 * with the payload and notice the kernel would send, or its refusal.
 * docs/local-engine.md says what runs where and what only a kernel can judge.
 */

export { meshOrderBlocks } from "./blocks";
export { checkMemoryKind, checkMeshSize, checkSpec, MAX_AXES, MAX_DEVICES } from "./checks";
export { shardingCode } from "./codegen";
export { applyEdit, type Edit, type EditContext, type EditOutcome } from "./edits";
export { type EditSource, LayoutError } from "./errors";
export { formatMesh, formatSpec, parseMesh, parseSpec } from "./grammar";
export { layoutPayload } from "./payload";
export { formatTypeStr } from "./typeStr";
