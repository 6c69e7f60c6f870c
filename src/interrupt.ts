/**
 * A command line tool's Ctrl-C (SIGINT) or stop (SIGTERM) while it works (`halserve backup`,
 * `import`, `export`): `interrupted` cleans up what it can at once, synchronously, and returns the
 * one line that says what is left; the line goes to stderr and the process ends with 128 + the
 * signal's number (130, 143), as a shell reports a command a signal ended. Returns the function
 * that stops listening, once the work is over.
 */
export function onInterrupt(interrupted: (signal: NodeJS.Signals) => string): () => void {
  const listener = (signal: NodeJS.Signals): void => {
    process.stderr.write(`halserve: ${interrupted(signal)}\n`);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', listener);
  process.once('SIGTERM', listener);
  return () => {
    process.off('SIGINT', listener);
    process.off('SIGTERM', listener);
  };
}
