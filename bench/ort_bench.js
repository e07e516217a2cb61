#!/usr/bin/env node
// ONNX Runtime's side of `onnxkit bench`: times a model's runs in onnxruntime-node and prints
// the same numbers (and, with --json, the same JSON fields) as `onnxkit bench --json`, so
// that bench/compare_runtime.py can put the two side by side.
//
//   node bench/ort_bench.js MODEL.onnx [options]
//
// Options:
//   --threads N            intra-op threads (default 1; 0: ORT's default, one per core)
//   --inter-op-threads N   inter-op threads, used with --parallel (default 1)
//   --parallel             executionMode 'parallel' (independent branches at once)
//   --level L              graph optimization level: disabled | basic | extended | all
//                          (default all)
//   --iterations N         timed runs (default 10)
//   --warmup N             untimed runs after the first one (default 2)
//   --input NAME=FILE      input from a .npy or .pb (TensorProto) file; repeatable
//   --dim NAME=V           symbolic dim of a generated input (default: 1 for the first dim,
//                          16 for the others, as `onnxkit bench`); repeatable
//   --seed N               seed for generated inputs: floats normal(0,1), integers in
//                          [0,10), integer inputs named *mask* all ones (default 0)
//   --output-dir DIR       write the first run's outputs as DIR/NAME.npy
//   --profile FILE         ORT's profiler on (every run): its Chrome trace goes
//                          to FILE and the op types that took the most kernel time are
//                          printed, as `onnxkit bench --profile` does (timings then include
//                          the profiler's overhead)
//   --json                 print one JSON object instead of text
//
// The first run is timed on its own (first_run_ms); peak_rss_mb is the process's VmHWM (its
// own high-water mark: resourceUsage().maxRSS would also count the process that started
// node, which Linux carries across execve), so run one model per process.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const { readModel, readNpy, readTensorPb, writeNpy, makeRng, randomTensor, fileStem } =
  require('./ort_optimize.js');

// VmHWM from /proc/self/status in MB; maxRSS where there is none.
function peakRssMb() {
  try {
    const found = fs.readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+)\s+kB/m);
    if (found) return Number(found[1]) / 1024;
  } catch (e) {
    // not Linux: fall through
  }
  return process.resourceUsage().maxRSS / 1024;  // KiB
}

function usage(message) {
  if (message) {
    console.error(`ort_bench: ${message} (--help for usage)`);
    process.exit(2);
  }
  const text = fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 30)
    .map((l) => l.replace(/^\/\/ ?/, '')).join('\n');
  console.log(text);
  process.exit(0);
}

function parseArgs(argv) {
  const a = {
    model: null, threads: 1, interOpThreads: 1, parallel: false, level: 'all', iterations: 10,
    warmup: 2, inputs: {}, dims: {}, seed: 0, outputDir: null, profile: null, json: false,
  };
  const value = (i) => {
    if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
    return argv[i + 1];
  };
  const count = (i, min) => {
    const text = value(i);
    const n = Number(text);
    if (!Number.isInteger(n) || n < min) usage(`${argv[i]}: '${text}' is not an integer >= ${min}`);
    return n;
  };
  const assignment = (text, flag) => {
    const eq = text.indexOf('=');
    if (eq <= 0 || eq + 1 === text.length) usage(`${flag} takes NAME=VALUE, got '${text}'`);
    return [text.slice(0, eq), text.slice(eq + 1)];
  };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    switch (arg) {
      case '--threads': a.threads = count(i++, 0); break;
      case '--inter-op-threads': a.interOpThreads = count(i++, 0); break;
      case '--parallel': a.parallel = true; break;
      case '--level': a.level = value(i++); break;
      case '--iterations': a.iterations = count(i++, 1); break;
      case '--warmup': a.warmup = count(i++, 0); break;
      case '--input': { const [k, v] = assignment(value(i++), arg); a.inputs[k] = v; break; }
      case '--dim': {
        const [k, v] = assignment(value(i++), arg);
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) usage(`--dim ${k}: '${v}' is not a dimension`);
        a.dims[k] = n;
        break;
      }
      case '--seed': a.seed = count(i++, 0); break;
      case '--output-dir': a.outputDir = value(i++); break;
      case '--profile': a.profile = value(i++); break;
      case '--json': a.json = true; break;
      case '-h': case '--help': usage(null); break;
      default:
        if (arg.startsWith('-') || a.model) usage(`unexpected argument '${arg}'`);
        a.model = arg;
    }
  }
  if (!a.model) usage('no model given');
  if (!['disabled', 'basic', 'extended', 'all'].includes(a.level)) usage(`unknown level '${a.level}'`);
  return a;
}

// Linear interpolation between the closest ranks (numpy's default), as `onnxkit bench`.
function percentile(sorted, p) {
  const rank = (p / 100) * (sorted.length - 1);
  const below = Math.floor(rank);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below] + (sorted[above] - sorted[below]) * (rank - below);
}

function makeFeeds(ort, a) {
  const { inputs } = readModel(fs.readFileSync(a.model));
  const files = { ...a.inputs };
  const rng = makeRng(a.seed);
  const feeds = {};
  const described = {};
  for (const input of inputs) {
    let t;
    if (files[input.name]) {
      const file = files[input.name];
      if (!fs.existsSync(file)) throw new Error(`${file}: no such file`);
      t = file.endsWith('.pb') ? readTensorPb(file) : readNpy(file);
      delete files[input.name];
    } else {
      const dims = (input.dims || []).map((d, i) => {
        if (typeof d === 'number') return d;
        if (typeof d === 'string' && d in a.dims) return a.dims[d];
        return i === 0 ? 1 : 16;
      });
      t = randomTensor(input, dims, rng);
    }
    feeds[input.name] = new ort.Tensor(t.type, t.data, t.dims);
    described[input.name] = `${t.type}[${t.dims.join(',')}]`;
  }
  const extra = Object.keys(files);
  if (extra.length) throw new Error(`--input names '${extra[0]}', which is not an input of the model`);
  return { feeds, described };
}

const msSince = (start) => Number(process.hrtime.bigint() - start) / 1e6;

async function main() {
  const a = parseArgs(process.argv.slice(2));
  if (!fs.existsSync(a.model)) throw new Error(`${a.model}: no such file`);
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    throw new Error('onnxruntime-node is missing from bench/node_modules: run scripts/install_model_tools.sh');
  }
  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: a.level,
    intraOpNumThreads: a.threads,
    interOpNumThreads: a.interOpThreads,
    executionMode: a.parallel ? 'parallel' : 'sequential',
  };
  if (a.profile) {
    options.enableProfiling = true;
    // ORT appends a timestamp; a per-process prefix finds the file again.
    options.profileFilePrefix = path.join(os.tmpdir(), `ort_bench_profile_${process.pid}`);
  }
  let start = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, options);
  const sessionCreateMs = msSince(start);
  const { feeds, described } = makeFeeds(ort, a);

  start = process.hrtime.bigint();
  const firstOutputs = await session.run(feeds);
  const firstRunMs = msSince(start);
  if (a.outputDir) {
    fs.mkdirSync(a.outputDir, { recursive: true });
    for (const name of session.outputNames) {
      const r = firstOutputs[name];
      writeNpy(path.join(a.outputDir, fileStem(name) + '.npy'), r.type, r.data, r.dims);
    }
  }
  for (let i = 0; i < a.warmup; ++i) await session.run(feeds);

  const times = [];
  const timedStart = process.hrtime.bigint();
  for (let i = 0; i < a.iterations; ++i) {
    start = process.hrtime.bigint();
    await session.run(feeds);
    times.push(msSince(start));
  }
  const wallMs = msSince(timedStart);
  const runsMs = times.slice();  // in run order, for onnxkit bench --report --against
  times.sort((x, y) => x - y);
  const profile = a.profile ? profileSummary(session, options.profileFilePrefix, a.profile) : null;
  const report = {
    runtime: 'onnxruntime-node',
    ort_version: require('onnxruntime-node/package.json').version,
    model: a.model,
    level: a.level,
    threads: a.threads,
    parallel: a.parallel,
    inter_op_threads: a.interOpThreads,
    warmup: a.warmup,
    iterations: times.length,
    session_create_ms: sessionCreateMs,
    first_run_ms: firstRunMs,
    min_ms: times[0],
    median_ms: percentile(times, 50),
    p90_ms: percentile(times, 90),
    p95_ms: percentile(times, 95),
    p99_ms: percentile(times, 99),
    max_ms: times[times.length - 1],
    mean_ms: times.reduce((x, y) => x + y, 0) / times.length,
    throughput: times.length / (wallMs / 1e3),
    peak_rss_mb: peakRssMb(),
    runs_ms: runsMs,
    inputs: described,
  };
  if (profile) report.profile = { file: a.profile, op_types: profile };
  if (a.json) {
    console.log(JSON.stringify(report, null, 2));
    return;
  }
  const f = (x) => x.toFixed(2);
  console.log(`model        ${a.model}`);
  console.log(`session      ORT ${report.ort_version}, level ${a.level}, ${a.threads} intra-op thread(s)` +
    (a.parallel ? `, parallel (${a.interOpThreads} inter-op)` : ''));
  for (const [name, text] of Object.entries(described)) console.log(`input        ${name}: ${text}`);
  console.log(`create       ${report.session_create_ms.toFixed(1)} ms`);
  console.log(`first run    ${f(firstRunMs)} ms`);
  console.log(`timed        ${times.length} runs after ${a.warmup} warmup, ${(wallMs / 1e3).toFixed(2)} s`);
  console.log(`latency ms   min ${f(report.min_ms)}  p50 ${f(report.median_ms)}  p90 ${f(report.p90_ms)}  ` +
    `p95 ${f(report.p95_ms)}  p99 ${f(report.p99_ms)}  max ${f(report.max_ms)}  mean ${f(report.mean_ms)}`);
  console.log(`throughput   ${f(report.throughput)} inferences/s`);
  console.log(`peak RSS     ${report.peak_rss_mb.toFixed(1)} MB`);
  if (profile) {
    console.log(`\nprofile written to ${a.profile}; kernel time by op type:`);
    console.log(`  ${'op type'.padEnd(30)} ${'total ms'.padStart(10)} ${'%'.padStart(8)} ${'calls'.padStart(8)}`);
    for (const row of profile.slice(0, 15)) {
      console.log(`  ${row.op_type.padEnd(30)} ${row.total_ms.toFixed(2).padStart(10)} ` +
        `${(row.percent.toFixed(1) + '%').padStart(8)} ${String(row.calls).padStart(8)}`);
    }
  }
}

// Ends ORT's profiling, moves its trace (PREFIX_<time>.json) to `file` and sums the kernel
// time of every node event by op type (all runs of the session), largest first.
function profileSummary(session, prefix, file) {
  session.endProfiling();
  const dir = path.dirname(prefix);
  const written = fs.readdirSync(dir).filter((f) => f.startsWith(path.basename(prefix)));
  if (written.length !== 1) throw new Error(`ORT wrote no profile under ${prefix}`);
  fs.copyFileSync(path.join(dir, written[0]), file);
  fs.unlinkSync(path.join(dir, written[0]));
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byOp = new Map();
  let total = 0;
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time') || !e.args) continue;
    const op = e.args.op_name || '?';
    const entry = byOp.get(op) || { op_type: op, total_ms: 0, calls: 0 };
    entry.total_ms += e.dur / 1e3;
    entry.calls += 1;
    byOp.set(op, entry);
    total += e.dur / 1e3;
  }
  const rows = [...byOp.values()].sort((x, y) => y.total_ms - x.total_ms);
  for (const row of rows) row.percent = total > 0 ? (100 * row.total_ms) / total : 0;
  return rows;
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message || e}`);
  process.exit(1);
});
