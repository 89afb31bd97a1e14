/**
 * Which label lines a tile of the array map can show whole. A line that
 * does not fit the tile's width or the height left is dropped, never cut:
 * the inspector and the tile's aria-label still say everything.
 *
 * Lines in order of importance: the devices (or, if "CPU 456-463" is too
 * wide, the ids alone), the replication badge, the tile's name, its index
 * range. They are drawn in their own order: name and badge on one line,
 * then the range, then the devices.
 */

export interface Size {
  width: number;
  height: number;
}

/** Natural sizes of a tile's label lines (nowrap), as laid out. */
export interface TileLabelSizes {
  name: Size;
  /** Null when the tile is not replicated. */
  badge: Size | null;
  index: Size;
  devices: Size;
  /** The devices line without its platform prefix (`456-463`). */
  ids: Size;
  /** Space between the name and the badge. */
  gap: number;
}

export interface FittedLabels {
  name: boolean;
  badge: boolean;
  index: boolean;
  /** "full": with the platform; "ids": the ids alone; null: dropped. */
  devices: "full" | "ids" | null;
}

export const NO_LABELS: FittedLabels = { name: false, badge: false, index: false, devices: null };

/** The lines that fit a content box of `box`, most important first. */
export function fitTileLabels(box: Size, sizes: TileLabelSizes): FittedLabels {
  const fits = (size: Size, height: number): boolean => size.width <= box.width && size.height <= height;
  let left = box.height;
  let devices: FittedLabels["devices"] = null;
  if (fits(sizes.devices, left)) devices = "full";
  else if (fits(sizes.ids, left)) devices = "ids";
  if (devices) left -= (devices === "full" ? sizes.devices : sizes.ids).height;
  // Name and badge share the head line: it costs height once.
  const headHeight = Math.max(sizes.name.height, sizes.badge?.height ?? 0);
  let badge = false;
  let name = false;
  if (sizes.badge && fits(sizes.badge, left)) {
    badge = true;
    left -= headHeight;
  }
  const nameWidth = sizes.name.width + (badge && sizes.badge ? sizes.gap + sizes.badge.width : 0);
  if (nameWidth <= box.width && sizes.name.height <= (badge ? left + headHeight : left)) {
    name = true;
    if (!badge) left -= headHeight;
  }
  const index = fits(sizes.index, left);
  return { name, badge, index, devices };
}

/**
 * The lines that fit a strip one line high when they stand side by side
 * (`gap` apart), most important first: a short, wide tile can still say
 * `t0 ×2 [0:8, 0:256] CPU 0,4`.
 */
export function fitTileLabelsInline(box: Size, sizes: TileLabelSizes, gap: number): FittedLabels {
  let left = box.width;
  const take = (size: Size): boolean => {
    const cost = size.width + (left < box.width ? gap : 0);
    if (size.height > box.height || cost > left) return false;
    left -= cost;
    return true;
  };
  let devices: FittedLabels["devices"] = null;
  if (take(sizes.devices)) devices = "full";
  else if (take(sizes.ids)) devices = "ids";
  const badge = sizes.badge !== null && take(sizes.badge);
  const name = take(sizes.name);
  const index = take(sizes.index);
  return { name, badge, index, devices };
}
