#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node) as the reference for onnxkit: optimizes a model at a given
// graph optimization level and saves the result, counts the nodes before and after, and can
// run the model on given inputs (.npy or .pb TensorProto) or seeded random ones, writing the
// outputs as .npy the way `onnxkit run --output-dir` names them (NAME.npy), and time runs.
//
//   node bench/ort_optimize.js MODEL.onnx [options]
//
// Options:
//   --level L            disabled | basic | extended | all (default basic)
//   --optimized PATH     where ORT saves the optimized model (default MODEL.ort_<level>.onnx
//                        next to MODEL); --no-save: don't save
//   --run                run the model once (implied by --input, --random, --output-dir, --runs)
//   --input NAME=FILE    input from a .npy or .pb (TensorProto) file; repeatable
//   --random             random data for inputs not given as files: floats normal(0,1),
//                        integers in [0,10), bools 0/1, as `onnxkit run --random`; except that
//                        integer/bool inputs whose name contains "mask" are all ones
//   --seed N             seed for --random (default 0)
//   --dim NAME=V         value for a symbolic dim (e.g. --dim batch=1 --dim seq=128); repeatable
//   --output-dir DIR     write each output as DIR/NAME.npy
//   --save-inputs DIR    write the inputs used as DIR/NAME.npy (feed them to onnxkit run)
//   --runs N             time N more runs after the first (warm-up) one; prints min/median ms
//   --threads N          intra-op threads (default 1)
//   --json               print one JSON summary line at the end
//
// Needs onnxruntime-node in bench/node_modules (scripts/install_model_tools.sh).
'use strict';

const fs = require('fs');
const path = require('path');

// ------------------------------------------------------------------------------------------
// A minimal protobuf wire-format reader, enough for ModelProto's graph, inputs, nodes and
// TensorProto.

function readVarint(buf, pos) {
  let result = 0;
  let mul = 1;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    result += (b & 0x7f) * mul;
    if (b < 0x80) return [result, pos];
    mul *= 128;
  }
}

// Calls fn(field, wireType, value, start, end) for each field of the message in
// buf[start, end). value: a number for varints (may lose precision past 2^53), else null;
// for length-delimited fields [start, end) is the payload; for fixed ones, the bytes.
function forEachField(buf, start, end, fn) {
  let pos = start;
  while (pos < end) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      fn(field, wire, v, pos, pos);
    } else if (wire === 1) {
      fn(field, wire, null, pos, pos + 8);
      pos += 8;
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      if (pos + len > end) throw new Error('truncated field');
      fn(field, wire, null, pos, pos + len);
      pos += len;
    } else if (wire === 5) {
      fn(field, wire, null, pos, pos + 4);
      pos += 4;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
}

const str = (buf, s, e) => buf.toString('utf8', s, e);

// ONNX TensorProto.DataType -> [ort type, TypedArray, npy descr]
const DTYPES = {
  1: ['float32', Float32Array, '<f4'],
  2: ['uint8', Uint8Array, '|u1'],
  3: ['int8', Int8Array, '|i1'],
  4: ['uint16', Uint16Array, '<u2'],
  5: ['int16', Int16Array, '<i2'],
  6: ['int32', Int32Array, '<i4'],
  7: ['int64', BigInt64Array, '<i8'],
  9: ['bool', Uint8Array, '|b1'],
  10: ['float16', Uint16Array, '<f2'],
  11: ['float64', Float64Array, '<f8'],
  12: ['uint32', Uint32Array, '<u4'],
  13: ['uint64', BigUint64Array, '<u8'],
};
const BY_ORT = Object.fromEntries(Object.entries(DTYPES).map(([k, v]) => [v[0], +k]));
const BY_NPY = Object.fromEntries(Object.entries(DTYPES).map(([k, v]) => [v[2], +k]));
BY_NPY['<b1'] = 9;
BY_NPY['|b1'] = 9;

// Op histogram of a GraphProto, counting the bodies of If/Loop/Scan (attribute g / graphs).
function countNodes(buf, start, end, hist) {
  forEachField(buf, start, end, (f, w, v, s, e) => {
    if (f !== 1 || w !== 2) return;  // GraphProto.node
    let op = '';
    let domain = '';
    forEachField(buf, s, e, (nf, nw, nv, ns, ne) => {
      if (nf === 4) op = str(buf, ns, ne);
      else if (nf === 7) domain = str(buf, ns, ne);
      else if (nf === 5) {  // AttributeProto
        forEachField(buf, ns, ne, (af, aw, av, as, ae) => {
          if ((af === 6 || af === 11) && aw === 2) countNodes(buf, as, ae, hist);
        });
      }
    });
    const key = domain && domain !== 'ai.onnx' ? `${domain}.${op}` : op;
    hist.set(key, (hist.get(key) || 0) + 1);
  });
  return hist;
}

// {graph: [start, end], inputs: [{name, elemType, dims: [number|string|null]}], initializers: Set}
function readModel(buf) {
  let graph = null;
  forEachField(buf, 0, buf.length, (f, w, v, s, e) => {
    if (f === 7 && w === 2) graph = [s, e];
  });
  if (!graph) throw new Error('no graph in the model');
  const inputs = [];
  const initializers = new Set();
  forEachField(buf, graph[0], graph[1], (f, w, v, s, e) => {
    if (f === 5 && w === 2) {  // initializer: TensorProto, name = 8
      forEachField(buf, s, e, (tf, tw, tv, ts, te) => {
        if (tf === 8) initializers.add(str(buf, ts, te));
      });
    } else if (f === 11 && w === 2) {  // input: ValueInfoProto
      const input = { name: '', elemType: 0, dims: null };
      forEachField(buf, s, e, (vf, vw, vv, vs, ve) => {
        if (vf === 1) input.name = str(buf, vs, ve);
        if (vf !== 2) return;
        forEachField(buf, vs, ve, (tf, tw, tv, ts, te) => {  // TypeProto.tensor_type = 1
          if (tf !== 1) return;
          forEachField(buf, ts, te, (xf, xw, xv, xs, xe) => {
            if (xf === 1) input.elemType = xv;
            if (xf !== 2) return;
            input.dims = [];
            forEachField(buf, xs, xe, (df, dw, dv, ds, de) => {  // TensorShapeProto.dim
              if (df !== 1) return;
              let dim = null;
              forEachField(buf, ds, de, (mf, mw, mv, ms, me) => {
                if (mf === 1) dim = mv;
                if (mf === 2) dim = str(buf, ms, me);
              });
              input.dims.push(dim);
            });
          });
        });
      });
      inputs.push(input);
    }
  });
  return { graph, inputs: inputs.filter((i) => !initializers.has(i.name)), initializers };
}

function nodeHistogram(file) {
  const buf = fs.readFileSync(file);
  const { graph } = readModel(buf);
  return countNodes(buf, graph[0], graph[1], new Map());
}

// ------------------------------------------------------------------------------------------
// Tensors: .npy and .pb in, .npy out

function copyTyped(Typed, buf, start, end) {
  const bytes = new Uint8Array(end - start);
  bytes.set(buf.subarray(start, end));
  return new Typed(bytes.buffer, 0, (end - start) / (Typed.BYTES_PER_ELEMENT || 1));
}

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', headerStart, headerStart + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const fortran = /'fortran_order':\s*True/.test(header);
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  const dims = shapeText.split(',').map((x) => x.trim()).filter((x) => x).map(Number);
  if (fortran) throw new Error(`${file}: Fortran order is not supported`);
  const elemType = BY_NPY[descr];
  if (!elemType) throw new Error(`${file}: dtype ${descr} is not supported`);
  const [type, Typed] = DTYPES[elemType];
  const data = copyTyped(Typed, buf, headerStart + headerLen, buf.length);
  return { type, data, dims };
}

function readTensorPb(file) {
  const buf = fs.readFileSync(file);
  const dims = [];
  let elemType = 1;
  let raw = null;
  const packed = { 4: [], 5: [], 7: [], 10: [], 11: [] };
  forEachField(buf, 0, buf.length, (f, w, v, s, e) => {
    if (f === 1) {
      if (w === 0) dims.push(v);
      else readPackedVarints(buf, s, e).forEach((d) => dims.push(Number(d)));
    } else if (f === 2) elemType = v;
    else if (f === 9) raw = [s, e];
    else if (f in packed) packed[f].push([w, v, s, e]);
  });
  const entry = DTYPES[elemType];
  if (!entry) throw new Error(`${file}: data type ${elemType} is not supported`);
  const [type, Typed] = entry;
  if (raw) return { type, data: copyTyped(Typed, buf, raw[0], raw[1]), dims };
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Typed(n);
  let i = 0;
  const put = (x) => { data[i++] = Typed === BigInt64Array || Typed === BigUint64Array ? BigInt(x) : x; };
  for (const [f, parts] of Object.entries(packed)) {
    for (const [w, v, s, e] of parts) {
      if (+f === 4) for (let p = s; p < e; p += 4) put(buf.readFloatLE(p));
      else if (+f === 10) for (let p = s; p < e; p += 8) put(buf.readDoubleLE(p));
      else if (w === 0) put(v);
      else readPackedVarints(buf, s, e).forEach((x) => put(typeof x === 'bigint' && Typed !== BigInt64Array && Typed !== BigUint64Array ? Number(BigInt.asIntN(32, x)) : x));
    }
  }
  if (i !== n) throw new Error(`${file}: ${i} values for shape [${dims}]`);
  return { type, data, dims };
}

function readPackedVarints(buf, s, e) {
  const out = [];
  let pos = s;
  while (pos < e) {
    let x = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      x |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) break;
      shift += 7n;
    }
    out.push(BigInt.asIntN(64, x));
  }
  return out;
}

function writeNpy(file, type, data, dims) {
  const elemType = BY_ORT[type];
  if (!elemType) throw new Error(`cannot write ${type} as .npy`);
  const descr = DTYPES[elemType][2];
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), body]));
}

// Seeded random data (mulberry32 + Box-Muller).
function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let spare = null;
  const normal = () => {
    if (spare !== null) { const s = spare; spare = null; return s; }
    let u = 0;
    while (u === 0) u = next();
    const r = Math.sqrt(-2 * Math.log(u));
    const th = 2 * Math.PI * next();
    spare = r * Math.sin(th);
    return r * Math.cos(th);
  };
  return { next, normal };
}

function randomTensor(input, dims, rng) {
  const entry = DTYPES[input.elemType];
  if (!entry) throw new Error(`input '${input.name}': random data for type ${input.elemType} is not supported`);
  const [type, Typed] = entry;
  const n = dims.reduce((a, b) => a * b, 1);
  const data = new Typed(n);
  const isFloat = ['float32', 'float64'].includes(type);
  const ones = !isFloat && /mask/i.test(input.name);
  for (let i = 0; i < n; ++i) {
    let x;
    if (isFloat) x = rng.normal();
    else if (ones) x = 1;
    else if (type === 'bool') x = rng.next() < 0.5 ? 0 : 1;
    else if (type === 'float16') throw new Error('random float16 is not supported');
    else x = Math.floor(rng.next() * 10);
    data[i] = Typed === BigInt64Array || Typed === BigUint64Array ? BigInt(x) : x;
  }
  return { type, data, dims };
}

// ------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const a = {
    model: null, level: 'basic', optimized: undefined, save: true, run: false, inputs: {},
    random: false, seed: 0, dims: {}, outputDir: null, saveInputs: null, runs: 0, threads: 1,
    json: false,
  };
  const value = (i) => {
    if (i + 1 >= argv.length) usage(`${argv[i]} needs a value`);
    return argv[i + 1];
  };
  const assignment = (text, flag) => {
    const eq = text.indexOf('=');
    if (eq <= 0) usage(`${flag} takes NAME=VALUE, got '${text}'`);
    return [text.slice(0, eq), text.slice(eq + 1)];
  };
  for (let i = 0; i < argv.length; ++i) {
    const arg = argv[i];
    switch (arg) {
      case '--level': a.level = value(i++); break;
      case '--optimized': a.optimized = value(i++); break;
      case '--no-save': a.save = false; break;
      case '--run': a.run = true; break;
      case '--input': { const [k, v] = assignment(value(i++), arg); a.inputs[k] = v; a.run = true; break; }
      case '--random': a.random = true; a.run = true; break;
      case '--seed': a.seed = parseInt(value(i++), 10); break;
      case '--dim': { const [k, v] = assignment(value(i++), arg); a.dims[k] = parseInt(v, 10); break; }
      case '--output-dir': a.outputDir = value(i++); a.run = true; break;
      case '--save-inputs': a.saveInputs = value(i++); a.run = true; break;
      case '--runs': a.runs = parseInt(value(i++), 10); a.run = true; break;
      case '--threads': a.threads = parseInt(value(i++), 10); break;
      case '--json': a.json = true; break;
      case '-h': case '--help': usage(null); break;
      default:
        if (arg.startsWith('-') || a.model) usage(`unexpected argument '${arg}'`);
        a.model = arg;
    }
  }
  if (!a.model) usage('no model given');
  if (!['disabled', 'basic', 'extended', 'all'].includes(a.level)) usage(`unknown level '${a.level}'`);
  if (a.optimized === undefined) {
    a.optimized = a.model.replace(/\.onnx$/, '') + `.ort_${a.level}.onnx`;
  }
  return a;
}

function usage(message) {
  const text = fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 26)
    .map((l) => l.replace(/^\/\/ ?/, '')).join('\n');
  if (message) {
    console.error(`ort_optimize: ${message} (--help for usage)`);
    process.exit(2);
  }
  console.log(text);
  process.exit(0);
}

function describe(t) {
  const n = t.data.length;
  const head = Array.from(t.data.slice(0, Math.min(n, 5)), (x) =>
    typeof x === 'bigint' ? x.toString() : Number(x).toPrecision(6)).join(', ');
  return `${t.type}[${t.dims.join(',')}]  ${head}${n > 5 ? ', ...' : ''}`;
}

function histogramText(hist) {
  return [...hist.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1))
    .map(([k, v]) => `${k} ${v}`).join(', ');
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  let ort;
  try {
    ort = require('onnxruntime-node');
  } catch (e) {
    console.error('ort_optimize: onnxruntime-node is missing: run scripts/install_model_tools.sh');
    process.exit(1);
  }
  const summary = { model: a.model, level: a.level, ort_version: require('onnxruntime-node/package.json').version };
  const before = nodeHistogram(a.model);
  summary.nodes_before = [...before.values()].reduce((x, y) => x + y, 0);
  console.log(`model      ${a.model}: ${summary.nodes_before} nodes`);

  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: a.level,
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
  };
  if (a.save) {
    options.optimizedModelFilePath = path.resolve(a.optimized);
    fs.mkdirSync(path.dirname(options.optimizedModelFilePath), { recursive: true });
  }
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(a.model, options);
  summary.load_ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (a.save) {
    const after = nodeHistogram(a.optimized);
    summary.optimized = a.optimized;
    summary.nodes_after = [...after.values()].reduce((x, y) => x + y, 0);
    summary.ops_after = Object.fromEntries(after);
    console.log(`optimized  ${a.optimized} (ORT ${summary.ort_version}, level ${a.level}): ` +
      `${summary.nodes_after} nodes, session created in ${summary.load_ms.toFixed(0)} ms`);
    console.log(`           ${histogramText(after)}`);
  }

  if (a.run) {
    const buf = fs.readFileSync(a.model);
    const { inputs } = readModel(buf);
    const rng = makeRng(a.seed);
    const feeds = {};
    const used = {};
    const files = { ...a.inputs };
    for (const input of inputs) {
      let t;
      if (files[input.name]) {
        const file = files[input.name];
        t = file.endsWith('.pb') ? readTensorPb(file) : readNpy(file);
        delete files[input.name];
      } else if (a.random) {
        const dims = (input.dims || []).map((d, i) => {
          if (typeof d === 'number') return d;
          if (typeof d === 'string') {
            if (!(d in a.dims)) usage(`input '${input.name}' dim ${i} is dynamic ('${d}'): set it with --dim ${d}=N`);
            return a.dims[d];
          }
          return 1;
        });
        t = randomTensor(input, dims, rng);
      } else {
        usage(`input '${input.name}' has no data (give --input ${input.name}=FILE, or --random)`);
      }
      used[input.name] = t;
      feeds[input.name] = new ort.Tensor(t.type, t.data, t.dims);
      console.log(`input  ${input.name}: ${describe(t)}`);
    }
    const extra = Object.keys(files);
    if (extra.length) usage(`--input names '${extra[0]}', which is not an input of the model`);
    if (a.saveInputs) {
      fs.mkdirSync(a.saveInputs, { recursive: true });
      for (const [name, t] of Object.entries(used)) {
        writeNpy(path.join(a.saveInputs, fileStem(name) + '.npy'), t.type, t.data, t.dims);
      }
    }
    let t1 = process.hrtime.bigint();
    let results = await session.run(feeds);
    summary.first_run_ms = Number(process.hrtime.bigint() - t1) / 1e6;
    if (a.outputDir) fs.mkdirSync(a.outputDir, { recursive: true });
    for (const name of session.outputNames) {
      const r = results[name];
      const t = { type: r.type, data: r.data, dims: r.dims };
      console.log(`output ${name}: ${describe(t)}`);
      if (a.outputDir) {
        const file = path.join(a.outputDir, fileStem(name) + '.npy');
        writeNpy(file, t.type, t.data, t.dims);
        console.log(`       written to ${file}`);
      }
    }
    if (a.runs > 0) {
      const times = [];
      for (let i = 0; i < a.runs; ++i) {
        t1 = process.hrtime.bigint();
        results = await session.run(feeds);
        times.push(Number(process.hrtime.bigint() - t1) / 1e6);
      }
      times.sort((x, y) => x - y);
      summary.runs = a.runs;
      summary.min_ms = times[0];
      summary.median_ms = times[Math.floor(times.length / 2)];
      console.log(`timing     ${a.runs} runs, ${a.threads} thread(s): min ${summary.min_ms.toFixed(2)} ms, ` +
        `median ${summary.median_ms.toFixed(2)} ms`);
    }
  }
  if (a.json) console.log(JSON.stringify(summary));
}

function fileStem(name) {
  return name.replace(/[^A-Za-z0-9_.-]/g, '_');
}

// bench/ort_bench.js reuses the readers and writers.
module.exports = { DTYPES, readModel, readNpy, readTensorPb, writeNpy, makeRng, randomTensor, fileStem };

if (require.main === module) {
  main().catch((e) => {
    console.error(`ort_optimize: ${e.message || e}`);
    process.exit(1);
  });
}
