/** The HAL browser's style: system fonts, no images, readable on a phone and on a wide screen. */
export const BROWSER_STYLE = `
:root { color-scheme: light dark; --accent: #2457c5; --muted: #6b7280; --bad: #b42318; --ok: #067647; --line: #d0d5dd; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { display: flex; flex-wrap: wrap; gap: .75rem; align-items: center; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
header .home { font-weight: 700; text-decoration: none; color: var(--accent); }
#crumbs { flex: 1; font-family: ui-monospace, monospace; }
#crumbs a { color: inherit; }
#token-form { display: flex; gap: .4rem; align-items: center; }
main { padding: 1rem; max-width: 72rem; }
h1 { font-size: 1.3rem; margin: .2rem 0 .8rem; }
h2 { font-size: 1.05rem; margin: 1.4rem 0 .5rem; }
a { color: var(--accent); }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
dl.fields { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dl.fields dt { font-weight: 600; }
dl.fields dd { margin: 0; }
pre { margin: 0; white-space: pre-wrap; font-size: .85rem; }
.pager { display: flex; gap: .75rem; align-items: center; margin: .6rem 0; }
.pager .current { color: var(--muted); }
ul.links { padding-left: 1.2rem; }
.problem { border: 1px solid var(--bad); border-left-width: 4px; padding: .5rem .8rem; margin: .6rem 0; }
.problem h2 { margin: 0 0 .3rem; color: var(--bad); }
.notice { border-left: 4px solid var(--ok); padding: .4rem .8rem; margin: .6rem 0; }
form.entity { display: grid; gap: .55rem; max-width: 40rem; }
.field label { display: block; font-weight: 600; }
.field input[type=text], .field input[type=number], .field select, .field textarea { width: 100%; padding: .3rem; font: inherit; }
.field textarea { font-family: ui-monospace, monospace; min-height: 4rem; }
.field .error { color: var(--bad); font-size: .88rem; }
.field.invalid input, .field.invalid select, .field.invalid textarea { border: 2px solid var(--bad); }
.actions { display: flex; gap: .6rem; }
button { font: inherit; padding: .3rem .8rem; cursor: pointer; }
button.danger { color: var(--bad); }
.muted { color: var(--muted); }
.collection { display: grid; grid-template-columns: minmax(10rem, 14rem) 1fr; gap: 1.2rem; align-items: start; }
@media (max-width: 44rem) { .collection { grid-template-columns: 1fr; } }
.content { min-width: 0; }
aside.facets h2 { margin-top: 0; }
aside.facets h3 { font-size: .95rem; margin: .8rem 0 .2rem; }
aside.facets ul { list-style: none; padding: 0; margin: 0; font-size: .9rem; }
aside.facets .count { color: var(--muted); font-variant-numeric: tabular-nums; }
aside.facets .count::before { content: "("; }
aside.facets .count::after { content: ")"; }
aside.facets .facet-clear { font-size: .85rem; }
form.search { display: flex; gap: .4rem; align-items: center; margin: 0 0 .6rem; }
form.search input { flex: 1; padding: .3rem; font: inherit; }
time { text-decoration: underline dotted; }
td time { white-space: nowrap; }
aside.facets summary { cursor: pointer; color: var(--muted); font-size: .85rem; }
`;
