// Validate an AsyncAPI document with the official parser (@asyncapi/parser).
// Usage: node tools/asyncapi/validate.mjs spec/v1/asyncapi.yaml
// Local file $refs resolve relative to the document. Prints every diagnostic; exits 1 when
// any has error severity (or the document cannot be read), 0 otherwise.
import { resolve } from 'node:path';
import { Parser, fromFile, DiagnosticSeverity } from '@asyncapi/parser';

const SEVERITY = ['error', 'warning', 'information', 'hint'];

async function main(argv) {
  if (argv.length !== 1) {
    console.error('usage: node validate.mjs ASYNCAPI_DOCUMENT');
    return 2;
  }
  const path = resolve(argv[0]);
  const parser = new Parser();
  let result;
  try {
    result = await fromFile(parser, path).parse();
  } catch (error) {
    console.error(`${argv[0]}: cannot parse: ${error.message}`);
    return 1;
  }
  const { document, diagnostics } = result;
  let errors = 0;
  for (const d of diagnostics) {
    if (d.severity === DiagnosticSeverity.Error) errors += 1;
    const where = d.path && d.path.length ? `/${d.path.join('/')}` : '/';
    const line = d.range ? `:${d.range.start.line + 1}` : '';
    const source = d.source ? d.source : argv[0];
    console.log(`${source}${line} ${SEVERITY[d.severity] ?? d.severity} ${d.code} at ${where}: ${d.message}`);
  }
  if (errors > 0 || document === undefined) {
    console.log(`${argv[0]}: INVALID (${errors} error(s), ${diagnostics.length} diagnostic(s))`);
    return 1;
  }
  const ops = document.operations().all().map((op) => op.id()).sort();
  const channels = document.channels().all().map((ch) => ch.address()).sort();
  console.log(
    `${argv[0]}: valid AsyncAPI ${document.version()} ` +
      `(${channels.length} channels: ${channels.join(', ')}; ${ops.length} operations: ${ops.join(', ')}; ` +
      `${diagnostics.length} diagnostic(s))`,
  );
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
