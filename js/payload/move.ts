/**
 * What the array widget's answer says its last edit cost to move the array
 * (the answer's `move`, docs/payload.md "The move"), as
 * src/shardviz/array/moves.py `resharding` writes it.
 */

/** One collective of a move, as src/shardviz/array/moves.py `resharding` writes it. */
export interface MoveCollective {
  kind: string;
  /** Mesh axes its groups span; null when they are no set of whole axes. */
  axes: string[] | null;
  group_size: number;
  count: number;
  /** Bytes one device sends for it, runs counted. */
  wire_bytes: number;
  /** A collective-permute's sender-to-receiver pairs. */
  pairs?: number;
}

/** A change of memory kind: each device copies its block (`bytes`) between device and host memory. */
export interface MemoryMove {
  from: string;
  to: string;
  bytes: number;
}

/**
 * What a move had to bring each device, read from the two layouts
 * (src/shardviz/array/move_needs.py): no program can move less.
 */
export interface MoveNeeds {
  /** The most one device lacked of its new block. */
  most_bytes: number;
  /** Devices that lacked any of it. */
  receiving: number;
  /** Devices of the new layout. */
  devices: number;
}

/** A move XLA compiled in a child process (past XLA:CPU's 2,048 devices of one process). */
export interface MoveChild {
  devices: number;
  seconds: number;
}

/** XLA's "Involuntary full rematerialization" while it compiled the move: every device gathered the whole array. */
export interface MoveRemat {
  shape: number[];
  dtype: string;
  /** The whole array's bytes, which each device then holds. */
  full_bytes: number;
  /** The two layouts, as the array view writes them (`P('y') on x=4, y=3`). */
  before: string;
  after: string;
  text: string;
}

/**
 * `{}` (nothing moved, or no array), the move's collectives and bytes, or why
 * no single program moves it; with what each device lacked (`needs`, absent
 * from older kernels' answers).
 */
export type MoveSummary =
  | Record<string, never>
  | {
      collectives: MoveCollective[];
      wire_bytes: number;
      memory?: MemoryMove;
      needs?: MoveNeeds;
      child?: MoveChild;
      rematerializations?: MoveRemat[];
    }
  | { error: string; needs?: MoveNeeds };
