/** The console's one stylesheet, served from the gateway at /assets/console.css (no outside assets). */
export const CONSOLE_CSS = String.raw`:root {
  --bg: #f7f8fa; --surface: #ffffff; --text: #1b1f24; --muted: #5b6573; --border: #d9dee5;
  --accent: #2457c5; --accent-text: #ffffff; --danger: #b42318; --ok: #12733a; --warn: #9a6700;
  --up: #1f8f4e; --degraded: #c98a00; --down: #c4321f; --none: #cfd5dd;
  --tone-0: #2457c5; --tone-1: #d17a00; --tone-2: #12855a; --tone-3: #b4478f; --tone-4: #3a9fd6; --tone-other: #9aa4b2; --tone-tools: #6b4fbb;
  --radius: 8px; --shadow: 0 1px 2px rgba(16, 24, 40, .06);
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 16px; line-height: 1.5; color: var(--text); background: var(--bg);
}
@media (prefers-color-scheme: dark) {
  :root { --bg: #0f1318; --surface: #171c23; --text: #e6e9ee; --muted: #9aa4b2; --border: #2b333d;
    --accent: #6d9bff; --accent-text: #0b0e12; --danger: #ff7b6b; --ok: #5fd08e; --warn: #f0c050; --none: #39424d;
    --tone-0: #6d9bff; --tone-1: #f0a040; --tone-2: #4fc48d; --tone-3: #e07cc0; --tone-4: #7cc8f0; --tone-other: #6b7583; --tone-tools: #a98bff; }
}
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; flex-direction: column; }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible, [tabindex]:focus-visible {
  outline: 3px solid var(--accent); outline-offset: 2px;
}
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
pre { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: .75rem 1rem; overflow-x: auto; }
.skip { position: absolute; left: -999px; top: 0; background: var(--surface); padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }
.visually-hidden { position: absolute !important; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; }
.top { background: var(--surface); border-bottom: 1px solid var(--border); }
.top nav { max-width: 96rem; margin: 0 auto; padding: .6rem 1rem; display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.25rem; }
.brand { font-weight: 700; font-size: 1.1rem; text-decoration: none; color: var(--text); }
.brand span { color: var(--accent); }
.top ul { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin: 0; padding: 0; flex: 1; }
.top ul a { text-decoration: none; color: var(--muted); padding: .25rem 0; border-bottom: 2px solid transparent; }
.top ul a:hover { color: var(--text); }
.top ul a[aria-current="page"] { color: var(--text); border-bottom-color: var(--accent); font-weight: 600; }
.signout { display: flex; align-items: center; gap: .5rem; margin: 0; }
.who { color: var(--muted); font-size: .9rem; }
main { width: 100%; max-width: 96rem; margin: 0 auto; padding: 1.25rem 1rem 3rem; flex: 1; }
main:focus { outline: none; }
.foot { border-top: 1px solid var(--border); color: var(--muted); font-size: .85rem; }
.foot p { max-width: 96rem; margin: 0 auto; padding: .75rem 1rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: .25rem 0 .5rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 .5rem; }
.lead { color: var(--muted); max-width: 60rem; margin-top: 0; }
.muted { color: var(--muted); }
.small { font-size: .875rem; }
.crumbs { font-size: .9rem; color: var(--muted); margin: 0; }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: 1rem 1.25rem; margin: 1rem 0; box-shadow: var(--shadow); }
.narrow { max-width: 40rem; }
.card > h2:first-child { margin-top: 0; }
.section-head, .provider-head { display: flex; align-items: center; justify-content: space-between; gap: 1rem; flex-wrap: wrap; }
.provider-head h2 { margin: 0; }
.table-scroll + .table-scroll { margin-top: .75rem; }
.table-scroll { position: relative; overflow-x: auto; border: 1px solid var(--border); border-radius: var(--radius); background: var(--surface); }
table.data { width: 100%; border-collapse: collapse; font-size: .92rem; }
table.data th, table.data td { text-align: left; padding: .55rem .75rem; border-bottom: 1px solid var(--border); vertical-align: top; }
table.data thead th { font-size: .8rem; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); white-space: nowrap; background: var(--bg); }
table.data thead th a { color: inherit; text-decoration: none; }
table.data thead th a:hover { text-decoration: underline; }
table.data tbody tr:last-child > * { border-bottom: 0; }
table.data tbody th { font-weight: 600; }
table.compact th, table.compact td { padding: .35rem .6rem; }
table.data caption { caption-side: top; text-align: left; padding: .5rem .75rem; color: var(--muted); font-size: .85rem; font-weight: 600; }
table.data code, table.data time { white-space: nowrap; }
.num { text-align: right !important; white-space: nowrap; font-variant-numeric: tabular-nums; }
.empty { color: var(--muted); text-align: center !important; padding: 1.5rem !important; }
.actions { white-space: nowrap; }
/* Wide tables: their buttons one above another, so that the actions column stays narrow at 1,280 px. */
td.actions.stacked .btn { display: block; width: max-content; }
td.actions.stacked .btn + .btn { margin-top: .3rem; }
form.inline { display: inline; margin: 0; }
td.limits { min-width: 12rem; max-width: 20rem; }
td.dates { white-space: nowrap; }
/* A key's name wraps (anywhere, if it must), its account, secret and status beneath it; model ids one a line. */
table.keys tbody th { min-width: 9rem; max-width: 15rem; overflow-wrap: anywhere; }
table.keys tbody th .sub { display: block; font-weight: normal; margin-top: .2rem; }
td.models { min-width: 11rem; max-width: 16rem; }
td.models code { white-space: normal; overflow-wrap: anywhere; }
table.mcp-servers code { white-space: normal; overflow-wrap: anywhere; }
table.mcp-servers [data-mcp-error] { overflow-wrap: anywhere; }
table.mcp-servers .headers code { white-space: nowrap; overflow-wrap: normal; }
/* Tables of many columns (keys, models): narrower gutters, so that every column shows at 1,280 px. */
table.data.wide th, table.data.wide td { padding-left: .5rem; padding-right: .5rem; }
td.limits li + li { margin-top: .2rem; }
.limit { white-space: nowrap; font-variant-numeric: tabular-nums; }
.limit-full { color: var(--danger); font-weight: 600; }
.limit-scope { color: var(--muted); font-size: .8rem; }
.limit-fields { display: grid; grid-template-columns: repeat(auto-fill, minmax(12rem, 1fr)); gap: .75rem 1rem; }
.pill { display: inline-block; padding: .05rem .55rem; border-radius: 999px; font-size: .8rem; font-weight: 600; border: 1px solid currentColor; white-space: nowrap; }
.pill-active, .pill-up { color: var(--ok); }
.pill-disabled, .pill-degraded, .pill-expired { color: var(--warn); }
.pill-revoked, .pill-down, .pill-open { color: var(--danger); }
.pill-cooling { color: var(--warn); border-style: dashed; }
.pill-unknown { color: var(--muted); }
ul.plain { list-style: none; margin: 0; padding: 0; }
.tag { font-size: .78rem; padding: .05rem .45rem; border-radius: 4px; background: var(--bg); border: 1px solid var(--border); white-space: nowrap; }
.btn { display: inline-block; font: inherit; font-weight: 600; font-size: .95rem; padding: .45rem .9rem; border-radius: 6px; border: 1px solid var(--accent);
  background: var(--accent); color: var(--accent-text); cursor: pointer; text-decoration: none; line-height: 1.3; }
.btn:hover { filter: brightness(1.08); }
.btn-secondary { background: transparent; color: var(--accent); }
.btn-danger { background: transparent; color: var(--danger); border-color: var(--danger); }
.btn-quiet { background: transparent; color: var(--muted); border-color: var(--border); font-weight: 500; }
.btn-small { font-size: .82rem; padding: .2rem .55rem; }
.row { display: flex; gap: .75rem; align-items: center; flex-wrap: wrap; }
.stack > * + * { margin-top: 1rem; }
[hidden] { display: none !important; }
.field { display: flex; flex-direction: column; gap: .3rem; border: 0; padding: 0; margin-left: 0; margin-right: 0; min-width: 0; }
fieldset.field { border: 1px solid var(--border); border-radius: var(--radius); padding: .75rem 1rem; }
legend { font-weight: 600; padding: 0 .25rem; }
label { font-weight: 600; }
.check { font-weight: 400; display: flex; gap: .5rem; align-items: baseline; }
.checks { display: grid; grid-template-columns: repeat(auto-fill, minmax(16rem, 1fr)); gap: .25rem 1rem; }
input:not([type=checkbox]), select, textarea { font: inherit; padding: .45rem .6rem; border: 1px solid var(--border); border-radius: 6px; background: var(--surface); color: var(--text); max-width: 100%; }
input[readonly] { background: var(--bg); color: var(--muted); }
input[aria-invalid="true"], select[aria-invalid="true"], textarea[aria-invalid="true"] { border-color: var(--danger); }
.hint { margin: 0; color: var(--muted); font-size: .85rem; }
.field-error { margin: 0; color: var(--danger); font-size: .9rem; font-weight: 600; }
.filter { display: flex; flex-wrap: wrap; gap: .5rem .75rem; align-items: center; margin: 1rem 0; }
.filter input[type=search] { min-width: 14rem; flex: 1 1 14rem; max-width: 28rem; }
.notice { border-radius: var(--radius); padding: .65rem 1rem; border: 1px solid var(--border); background: var(--surface); }
.notice p, .notice ul { margin: .2rem 0; }
.notice-ok { border-color: var(--ok); }
.notice-error { border-color: var(--danger); color: var(--danger); }
.secret { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin: 1rem 0; }
.secret-value { display: block; flex: 1 1 20rem; padding: .6rem .8rem; background: var(--bg); border: 1px dashed var(--accent); border-radius: 6px; word-break: break-all; user-select: all; }
.copy-status { color: var(--ok); font-weight: 600; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1.25rem; margin: 1rem 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.banner { padding: .9rem 1.1rem; border-radius: var(--radius); border: 1px solid var(--border); border-left-width: 6px; background: var(--surface); font-size: 1.05rem; }
.banner-up { border-left-color: var(--up); }
.banner-degraded { border-left-color: var(--degraded); }
.banner-down { border-left-color: var(--down); }
.banner-unknown { border-left-color: var(--none); }
.stats { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .5rem 1rem; margin: .75rem 0; }
.stats dt { color: var(--muted); font-size: .8rem; }
.stats dd { margin: 0; font-weight: 600; font-variant-numeric: tabular-nums; }
.history { margin: .75rem 0; }
.bars { display: flex; gap: 2px; height: 2rem; align-items: stretch; }
.bar { flex: 1; border-radius: 2px; min-width: 2px; }
.bar-up { background: var(--up); }
.bar-degraded { background: var(--degraded); }
.bar-down { background: var(--down); }
.bar-none { background: var(--none); }
.bars-legend { display: flex; justify-content: space-between; margin-top: .2rem; }
.usage-controls { display: flex; flex-wrap: wrap; align-items: center; gap: .75rem 1.5rem; margin: 1rem 0; }
.usage-controls .filter { margin: 0; }
.usage-controls .filter label { color: var(--muted); font-size: .85rem; }
.csv-link { margin-left: auto; }
.switch { display: flex; align-items: center; gap: .5rem; }
.switch-label { color: var(--muted); font-size: .85rem; font-weight: 600; }
.switch ul { list-style: none; display: flex; margin: 0; padding: 0; border: 1px solid var(--border); border-radius: 6px; overflow: hidden; }
.switch li + li { border-left: 1px solid var(--border); }
.switch a { display: block; padding: .3rem .75rem; text-decoration: none; color: var(--text); background: var(--surface); font-size: .9rem; white-space: nowrap; }
.switch a:hover { background: var(--bg); }
.switch a[aria-current] { background: var(--accent); color: var(--accent-text); font-weight: 600; }
.usage-totals { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: .75rem 1rem; }
.usage-totals dd { font-size: 1.25rem; }
.chart { margin: .5rem 0 1rem; }
/* On a narrow screen the chart scrolls sideways; right-to-left, the scroll starts at its end: today. */
.chart-frame { overflow-x: auto; direction: rtl; background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: .5rem .5rem .25rem; }
.chart svg { display: block; direction: ltr; width: 100%; min-width: 40rem; height: auto; }
.chart text { font-size: 12px; fill: var(--muted); font-family: inherit; font-variant-numeric: tabular-nums; }
.chart .chart-empty { font-size: 15px; }
.chart-grid line { stroke: var(--border); stroke-width: 1; }
.legend { list-style: none; display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; margin: .5rem 0 0; padding: 0; font-size: .85rem; }
.legend li { display: flex; align-items: center; gap: .4rem; }
.swatch { display: inline-block; width: .8rem; height: .8rem; border-radius: 2px; }
.tone-0 { fill: var(--tone-0); background: var(--tone-0); }
.tone-1 { fill: var(--tone-1); background: var(--tone-1); }
.tone-2 { fill: var(--tone-2); background: var(--tone-2); }
.tone-3 { fill: var(--tone-3); background: var(--tone-3); }
.tone-4 { fill: var(--tone-4); background: var(--tone-4); }
.tone-other { fill: var(--tone-other); background: var(--tone-other); }
.tone-tools { fill: var(--tone-tools); background: var(--tone-tools); }
.tone-input { fill: var(--tone-0); background: var(--tone-0); }
.tone-output { fill: var(--tone-1); background: var(--tone-1); }
details summary { cursor: pointer; font-weight: 600; margin: .5rem 0; }
details > .field + .field { margin-top: 1rem; }
@media (max-width: 640px) {
  h1 { font-size: 1.35rem; }
  .card { padding: .85rem; }
  .facts { grid-template-columns: 1fr; gap: 0; }
  .facts dd { margin-bottom: .5rem; }
  .bars { gap: 1px; height: 1.5rem; }
  .signout { width: 100%; justify-content: space-between; }
}
`;
