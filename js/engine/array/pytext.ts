/**
 * Python's text forms of the values the engine's messages and code show:
 * `repr` of a str, of tuples and lists of str or int, thousands separators,
 * whitespace, and code-point slicing. The Python engine writes its messages
 * with these, so the local engine must write them the same way, byte for byte.
 */

/** Characters Python's `str.isspace()` (and `re`'s `\s`) takes for whitespace. */
const PY_WHITESPACE = new Set([
  0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
  0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
]);

/** True when the one-code-point string `ch` is whitespace to Python. */
export function isPySpace(ch: string): boolean {
  return PY_WHITESPACE.has(ch.codePointAt(0) ?? -1);
}

/** The code points of `text` (Python indexes strings by code point, JavaScript by UTF-16 unit). */
export function codePoints(text: string): string[] {
  return Array.from(text);
}

/** `text.strip()`. */
export function pyStrip(text: string): string {
  const chars = codePoints(text);
  let start = 0;
  let end = chars.length;
  while (start < end && isPySpace(chars[start])) start++;
  while (end > start && isPySpace(chars[end - 1])) end--;
  return chars.slice(start, end).join("");
}

// str.isprintable() is false for these general categories (a space aside).
const NOT_PRINTABLE = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;

function hex(code: number, width: number): string {
  return code.toString(16).padStart(width, "0");
}

/** `repr(text)` for a str, as CPython writes it. */
export function pyRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\t") out += "\\t";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (code < 0x20 || code === 0x7f) out += `\\x${hex(code, 2)}`;
    else if (code < 0x7f) out += ch;
    else if (ch !== " " && NOT_PRINTABLE.test(ch)) {
      out += code <= 0xff ? `\\x${hex(code, 2)}` : code <= 0xffff ? `\\u${hex(code, 4)}` : `\\U${hex(code, 8)}`;
    } else out += ch;
  }
  return out + quote;
}

/** `repr(tuple(items))` of already-repr'd items: `()`, `(a,)`, `(a, b)`. */
export function pyTuple(items: readonly string[]): string {
  return items.length === 1 ? `(${items[0]},)` : `(${items.join(", ")})`;
}

/** `repr(list(items))` of already-repr'd items. */
export function pyList(items: readonly string[]): string {
  return `[${items.join(", ")}]`;
}

/** `f"{n:,}"`: an integer with commas between groups of three digits. */
export function withThousands(n: bigint | number): string {
  const digits = (n < 0 ? -BigInt(n) : BigInt(n)).toString();
  const grouped = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return n < 0 ? `-${grouped}` : grouped;
}
