/**
 * A name pattern: `*` any run of characters (none included), `?` exactly one; the whole name must
 * match. Matched by walking both strings once, going back only to the last `*` (no regular
 * expression, so no pattern can make a name cost more than its length times the pattern's).
 */
export class Glob {
  /** A pattern that is a literal prefix and one trailing `*` (`claude-*`, the usual shape) is a prefix test. */
  private readonly prefix: string | undefined;

  constructor(readonly pattern: string) {
    const star = pattern.indexOf('*');
    this.prefix = star === pattern.length - 1 && !pattern.includes('?') ? pattern.slice(0, -1) : undefined;
  }

  matches(name: string): boolean {
    if (this.prefix !== undefined) return name.startsWith(this.prefix);
    const pattern = this.pattern;
    let p = 0;
    let n = 0;
    let star = -1;
    let resume = 0;
    while (n < name.length) {
      const c = pattern[p];
      if (c === '*') {
        star = p++;
        resume = n;
      } else if (c !== undefined && (c === '?' || c === name[n])) {
        p++;
        n++;
      } else if (star !== -1) {
        p = star + 1;
        n = ++resume;
      } else {
        return false;
      }
    }
    while (pattern[p] === '*') p++;
    return p === pattern.length;
  }
}

/** One-off match (discovery's include/exclude lists). */
export function globMatches(pattern: string, name: string): boolean {
  return new Glob(pattern).matches(name);
}
