// tests/contract/validate.mjs - validates OpenAPI documents with a validator pacer did not
// write: @apidevtools/swagger-parser (pinned in package-lock.json, installed by make deps),
// which checks a document against the official OpenAPI 3.0 schema (so a 3.1 construct such
// as "type": ["number", "null"] in a 3.0.3 document is an error) and resolves every $ref.
//
//   node tests/contract/validate.mjs FILE...
//
// One line per file: "ok: FILE (OpenAPI 3.0.3)" or "invalid: FILE: the validator's
// messages". Exit 0 when every file is valid, 1 otherwise, 2 on bad usage.
import SwaggerParser from '@apidevtools/swagger-parser';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node tests/contract/validate.mjs FILE...');
  process.exit(2);
}
let bad = 0;
for (const f of files) {
  try {
    // validate() parses a copy of its own: the file on disk is what is checked.
    const api = await SwaggerParser.validate(f);
    console.log('ok: ' + f + ' (OpenAPI ' + api.openapi + ')');
  } catch (e) {
    bad++;
    console.log('invalid: ' + f + ': ' + String(e.message).split('\n').slice(0, 12).join('\n  '));
  }
}
process.exit(bad ? 1 : 0);
