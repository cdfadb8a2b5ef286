/**
 * CSV as RFC 4180 writes it (CRLF lines, a field quoted when it holds a quote, a comma or a line
 * break). Text that a spreadsheet would run as a formula (starting with = + - @, a tab or a
 * carriage return) gets a leading apostrophe, so a key name such as `=HYPERLINK(…)` stays text.
 */
export type CsvCell = string | number;

function field(cell: CsvCell): string {
  let text = typeof cell === 'number' ? String(cell) : /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
  if (/[",\r\n]/.test(text)) text = `"${text.replaceAll('"', '""')}"`;
  return text;
}

export function csvLine(cells: readonly CsvCell[]): string {
  return `${cells.map(field).join(',')}\r\n`;
}
