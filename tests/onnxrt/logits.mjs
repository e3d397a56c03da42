// tests/onnxrt/logits.mjs - an independent runtime's verdict on an ONNX file pacer exported
// (tests/integration/onnx_train.sh).
// usage: node tests/onnxrt/logits.mjs MODEL.onnx X.bin N CxHxW PACER_LOGITS.bin LABELS.bin
// Runs MODEL.onnx with onnxruntime-node (CPU) on the N images of X.bin (float32 LE, each
// CxHxW), compares its logits with pacer's (PACER_LOGITS.bin, float32 LE
// (N, classes)) and prints the largest difference relative to max(1, |logit|), how many
// predictions differ, and the accuracy against LABELS.bin (N uint8) as one JSON line.
// Exits 0 when it ran (the caller judges the figures), 2 when it could not.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");
const [model, xfile, nstr, shape, pfile, lfile] = process.argv.slice(2);
const n = Number(nstr);
const floats = (f) => {
  const b = readFileSync(f);
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
};
try {
  const session = await ort.InferenceSession.create(model);
  const x = floats(xfile);
  const dims = shape.split("x").map(Number);
  if (x.length !== n * dims.reduce((a, b) => a * b, 1)) throw new Error(`X.bin: not ${n} images of ${shape}`);
  const feeds = { [session.inputNames[0]]: new ort.Tensor("float32", x, [n, ...dims]) };
  const got = (await session.run(feeds))[session.outputNames[0]].data;
  const want = floats(pfile);
  const labels = readFileSync(lfile);
  if (got.length !== want.length) throw new Error(`${got.length} logits, pacer wrote ${want.length}`);
  const k = got.length / n;
  let maxRel = 0, differ = 0, correct = 0;
  const argmax = (a, i) => {
    let best = 0;
    for (let c = 1; c < k; c++) if (a[i * k + c] > a[i * k + best]) best = c;
    return best;
  };
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < k; c++) {
      const g = got[i * k + c], w = want[i * k + c];
      maxRel = Math.max(maxRel, Math.abs(g - w) / Math.max(1, Math.abs(w)));
    }
    const p = argmax(got, i);
    if (p !== argmax(want, i)) differ++;
    if (p === labels[i]) correct++;
  }
  console.log(JSON.stringify({ max_rel_diff: maxRel, predictions_differ: differ, accuracy: correct / n }));
} catch (e) {
  console.error(`logits.mjs: ${e.message}`);
  process.exit(2);
}
