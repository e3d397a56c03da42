// tests/onnxrt/lm_logits.mjs - an independent runtime's logits of a language model pacer
// exported (tests/integration/gpt_onnx_torch.sh).
// usage: node tests/onnxrt/lm_logits.mjs MODEL.onnx IDS.i32 T OUT.f32
// Runs MODEL.onnx with onnxruntime-node (CPU) on the rows of IDS.i32 (int32 LE, rows of
// T + 1 ids: the first T of each row are one window, fed as int64 (N, T)) and writes its
// (N, T, V) logits to OUT.f32 (float32 LE). Exits 0 when it ran, 2 when it could not.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");
const [model, idsfile, tstr, out] = process.argv.slice(2);
const T = Number(tstr);
try {
  const b = readFileSync(idsfile);
  const rows = new Int32Array(b.buffer, b.byteOffset, b.length / 4);
  const n = rows.length / (T + 1);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${idsfile}: not rows of ${T + 1} ids`);
  const ids = new BigInt64Array(n * T);
  for (let i = 0; i < n; i++) for (let t = 0; t < T; t++) ids[i * T + t] = BigInt(rows[i * (T + 1) + t]);
  const session = await ort.InferenceSession.create(model);
  const feeds = { [session.inputNames[0]]: new ort.Tensor("int64", ids, [n, T]) };
  const got = (await session.run(feeds))[session.outputNames[0]].data;
  writeFileSync(out, Buffer.from(got.buffer, got.byteOffset, got.byteLength));
} catch (e) {
  console.error(`lm_logits: ${e.message}`);
  process.exit(2);
}
