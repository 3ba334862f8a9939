// Times one ONNX model with onnxruntime-node (CPU provider); driven by benchmarks/compare_peers.py.
//
//   NODE_PATH=~/.cache/darkbert/peers/node_modules node benchmarks/ort_runner.js \
//     --model bert.onnx --input ids.bin --batch 8 --seq 128 --threads 2 --warmup 2 --reps 5 [--dump out.bin]
//
// --input holds batch*seq little-endian int64 token ids (row-major [B, L]); attention_mask is all ones and
// token_type_ids all zeros. --dump writes the first output (last hidden state, float32 [B, L, H]) followed by
// the second (layer 0 attention pattern, float32 [B, heads, L, L]) so the caller can check the numbers.
// Prints one JSON line: {"times_ms": [...], "peak_rss_mb": x, "ort_version": "..."}.
'use strict';

const fs = require('fs');  // input ids, output dump
const ort = require('onnxruntime-node');

function parseArgs(argv) {
  const args = {warmup: 2, reps: 5, threads: 1, dump: ''};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(i + 1 < argv.length)) throw new Error(`option --${key} needs a value`);
    args[key] = argv[i + 1];
  }
  for (const key of ['batch', 'seq', 'threads', 'warmup', 'reps']) args[key] = Number(args[key]);
  for (const key of ['model', 'input', 'batch', 'seq']) {
    if (args[key] === undefined || Number.isNaN(args[key])) throw new Error(`missing or bad --${key}`);
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const count = args.batch * args.seq;
  const raw = fs.readFileSync(args.input);
  if (raw.length !== count * 8) {
    throw new Error(`${args.input}: expected ${count} int64 ids (${count * 8} bytes), got ${raw.length} bytes`);
  }
  const ids = new BigInt64Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
  const dims = [args.batch, args.seq];
  const feeds = {
    input_ids: new ort.Tensor('int64', ids, dims),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(count).fill(1n), dims),
    token_type_ids: new ort.Tensor('int64', new BigInt64Array(count), dims),
  };

  const session = await ort.InferenceSession.create(args.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
  });

  let outputs;
  for (let i = 0; i < args.warmup; ++i) outputs = await session.run(feeds);
  const times = [];
  for (let i = 0; i < args.reps; ++i) {
    const start = process.hrtime.bigint();
    outputs = await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }

  if (args.dump) {
    const names = session.outputNames;
    const first = outputs[names[0]].data, second = outputs[names[1]].data;
    const buffers = [first, second].map((a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    fs.writeFileSync(args.dump, Buffer.concat(buffers));
  }
  // VmHWM, not resourceUsage().maxRSS: Linux carries maxRSS over fork + exec from the (large) parent.
  const hwm = /VmHWM:\s+(\d+)\s+kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  const peak_rss_mb = hwm ? Number(hwm[1]) / 1024 : null;
  console.log(JSON.stringify({times_ms: times, peak_rss_mb, ort_version: ort.env.versions.common}));
}

main().catch((err) => {
  console.error(`ort_runner: ${err.message}`);
  process.exit(1);
});
