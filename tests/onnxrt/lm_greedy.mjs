// tests/onnxrt/lm_greedy.mjs - greedy decoding of a language model pacer exported, by an
// independent runtime (tests/integration/onnx_lm_generate.sh).
// usage: node tests/onnxrt/lm_greedy.mjs MODEL.onnx T IDS N
// IDS: the prompt's token ids, comma-separated; T: the model's window. Runs MODEL.onnx
// (int64 ids (1, T) in, logits (1, T, V) out) with onnxruntime-node (CPU) N times, no cache:
// the window is the sequence's last T ids (nanoGPT's idx[:, -block_size:]), padded on the
// right with id 0 up to T (the model is causal: no position reads a later one, so the
// padding changes nothing before it), and the next id is the argmax of the logits at the
// window's last real position (the lowest id on ties, pacer's greedy rule). Prints the N
// ids as a JSON array. Exits 0 when it ran, 2 when it could not.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ort = require("onnxruntime-node");
const [model, tstr, idstr, nstr] = process.argv.slice(2);
try {
  const T = Number(tstr), n = Number(nstr);
  const seq = (idstr || "").split(",").map(Number);
  if (!Number.isInteger(T) || T < 1 || !Number.isInteger(n) || n < 1 || !seq.length ||
      seq.some((v) => !Number.isInteger(v) || v < 0))
    throw new Error("usage: lm_greedy.mjs MODEL.onnx T IDS N");
  const session = await ort.InferenceSession.create(model);
  const out = [];
  for (let k = 0; k < n; k++) {
    const win = seq.slice(-T), ids = new BigInt64Array(T);
    win.forEach((v, i) => { ids[i] = BigInt(v); });
    const logits = (await session.run({ [session.inputNames[0]]: new ort.Tensor("int64", ids, [1, T]) }))[
      session.outputNames[0]];
    const V = logits.dims[logits.dims.length - 1];
    if (logits.dims.length !== 3 || logits.dims[1] !== T) throw new Error(`logits of shape [${logits.dims}], want [1, ${T}, V]`);
    const row = logits.data.subarray((win.length - 1) * V, win.length * V);
    let best = 0;
    for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
    seq.push(best);
    out.push(best);
  }
  console.log(JSON.stringify(out));
} catch (e) {
  console.error(`lm_greedy: ${e.message}`);
  process.exit(2);
}
