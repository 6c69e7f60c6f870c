// A second test reporter for `npm run test:suite`: the TAP stream stays on stdout, and this one
// writes, after the last test, one block naming every failed test with its file and the first lines
// of its error. A CI log shows only its tail; without this, the tail says "fail 1" and not which.
const MAX_ERROR_LINES = 12;

/** Node's test runner passes the event stream; the summary goes out once the stream ends. */
export default async function* failureSummary(source) {
  const failures = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, line, details } = event.data;
    // A suite fails when a test in it fails; the test itself is the one worth naming.
    if (details?.type === 'suite') continue;
    const cause = details?.error?.cause ?? details?.error;
    const text = String(cause?.stack ?? cause?.message ?? cause ?? 'no error recorded');
    failures.push({ name, where: file ? `${file}${line ? `:${line}` : ''}` : '(unknown file)', text });
  }
  if (failures.length === 0) return;
  yield `\n# ${failures.length} failed test${failures.length === 1 ? '' : 's'}:\n`;
  for (const failure of failures) {
    yield `# not ok: ${failure.name}\n#   at ${failure.where}\n`;
    for (const line of failure.text.split('\n').slice(0, MAX_ERROR_LINES)) yield `#   ${line}\n`;
  }
}
