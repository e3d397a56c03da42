// tests/bpe/oracle.mjs - the oracle of tests/integration/bpe_oracle.sh, from gpt-tokenizer's
// GPT-2 (r50k_base) encoding:
//   node oracle.mjs export DIR        writes DIR/vocab.json and DIR/merges.txt, GPT-2's
//                                     files rebuilt from the package's ranks
//   node oracle.mjs compare SHARD TXT  1 if the ids of llm.c's shard SHARD are the package's
//                                     encoding of TXT (valid UTF-8), else prints the first difference
//   node oracle.mjs roundtrip SHARD TXT 1 if the shard's ids, decoded with the package's
//                                     ranks, are TXT's bytes (any bytes, invalid UTF-8 too)
import fs from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const ranks = require('gpt-tokenizer/cjs/bpeRanks/r50k_base').default;
const enc = require('gpt-tokenizer/cjs/encoding/r50k_base');

// GPT-2's bytes_to_unicode.
const byteToChar = [];
let extra = 0;
for (let b = 0; b < 256; b++) {
  const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  byteToChar[b] = String.fromCodePoint(printable ? b : 256 + extra++);
}
const mapBytes = (bytes) => Array.from(bytes, (b) => byteToChar[b]).join('');

function exportFiles(dir) {
  const tokens = ranks.map((t) => (typeof t === 'string' ? Buffer.from(t, 'utf8') : Buffer.from(t)));
  const rankOf = new Map(tokens.map((t, i) => [t.toString('latin1'), i]));
  const vocab = {};
  tokens.forEach((t, i) => { vocab[mapBytes(t)] = i; });
  vocab['<|endoftext|>'] = tokens.length;
  const merges = ['#version: 0.2'];
  // A token's merge is the last step of BPE over its own bytes with the ranks below its own.
  tokens.forEach((t, id) => {
    if (t.length < 2) return;
    let parts = Array.from(t, (b) => Buffer.from([b]));
    while (parts.length > 2) {
      let best = Infinity, at = -1;
      for (let i = 0; i + 1 < parts.length; i++) {
        const r = rankOf.get(Buffer.concat([parts[i], parts[i + 1]]).toString('latin1'));
        if (r !== undefined && r < id && r < best) { best = r; at = i; }
      }
      if (at < 0) break;
      parts.splice(at, 2, Buffer.concat([parts[at], parts[at + 1]]));
    }
    if (parts.length === 2) merges.push(mapBytes(parts[0]) + ' ' + mapBytes(parts[1]));
  });
  fs.writeFileSync(dir + '/vocab.json', JSON.stringify(vocab));
  fs.writeFileSync(dir + '/merges.txt', merges.join('\n') + '\n');
}

function readShard(shard) {
  const buf = fs.readFileSync(shard);
  const head = new Int32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + 1024));
  if (head[0] !== 20240520 || head[1] !== 1 || buf.length !== 1024 + 2 * head[2]) return null;
  return Array.from(new Uint16Array(buf.buffer.slice(buf.byteOffset + 1024, buf.byteOffset + 1024 + 2 * head[2])));
}

function roundtrip(shard, txt) {
  const ids = readShard(shard);
  if (!ids) { console.log(`${shard}: not an llm.c shard`); return; }
  const got = Buffer.concat(ids.map((i) => (typeof ranks[i] === 'string' ? Buffer.from(ranks[i], 'utf8') : Buffer.from(ranks[i]))));
  console.log(got.equals(fs.readFileSync(txt)) ? '1' : `${txt}: the ids decode to other bytes`);
}

function compare(shard, txt) {
  const got = readShard(shard);
  if (!got) { console.log(`${shard}: not an llm.c shard`); return; }
  const want = enc.encode(fs.readFileSync(txt, 'utf8'), { disallowedSpecial: new Set() });
  for (let i = 0; i < Math.max(got.length, want.length); i++) {
    if (got[i] !== want[i]) {
      console.log(`${txt}: token ${i}: pacer ${got[i]}, gpt-tokenizer ${want[i]} (pacer ${got.length} tokens, gpt-tokenizer ${want.length})`);
      return;
    }
  }
  console.log('1');
}

if (process.argv[2] === 'export') exportFiles(process.argv[3]);
else if (process.argv[2] === 'roundtrip') roundtrip(process.argv[3], process.argv[4]);
else compare(process.argv[3], process.argv[4]);
