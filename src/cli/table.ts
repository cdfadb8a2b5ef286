// The plain-text table the listing commands print.

/** Prints columns padded to their widest cell; the last `numeric` columns are aligned right. */
export function printTable(header: readonly string[], rows: readonly (readonly string[])[], numeric = 0): void {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const right = header.length - numeric;
  for (const row of [header, ...rows]) console.log(row.map((cell, i) => (i >= right ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!))).join('  ').trimEnd());
}
