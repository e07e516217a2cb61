#!/usr/bin/env python3
"""`onnxkit serve` under load: throughput and p50/p99 latency from Debian's `hey` at several
concurrencies, for binary and JSON requests, batching on and off, cache on and off; and
`onnxkit bench` on the same model and threads, for what a request costs over a bare run.

    /usr/bin/python3 bench/serve_bench.py [--models resnet50,bert_base] [--duration 10]
        [--concurrency 1,8,32] [--threads 2] [--soak SECONDS] [--onnxkit PATH]
        [--modes plain,instances,batching,cache] [--client hey|perf_analyzer]
    /usr/bin/python3 bench/serve_bench.py --alternate ROUNDS [--models resnet50] [--threads 1]

Modes: plain (one request at a time on --threads), instances (no batching, two requests at a
time on half the threads each: the other way to keep cores busy), batching, cache.
--client perf_analyzer loads the server with Triton's perf_analyzer instead (binary requests
only; scripts/install_perf_analyzer.sh), the tool Triton users measure servers with. It takes
more CPU per request than hey, on the cores the server uses.

The server and `hey` share this machine's cores: on a busy machine the numbers swing, so read
ratios measured in one run, not absolute values. With the cache on, every request repeats the
same input: that row is the cache's best case (a hit), not a model figure.

--alternate ROUNDS compares a binary request at concurrency 1 with `onnxkit bench` on the same
model and threads, alternating the two ROUNDS times, with what survives a busy machine best:
the server's CPU time and voluntary context switches per request (its /proc, over the run).
"""

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONNXKIT = os.path.join(ROOT, "build", "onnxkit")
PERF_ANALYZER = os.path.join(ROOT, ".venv-serve", "perf_analyzer", "bin", "perf_analyzer")
MODELS = {
    # name: (file, input builders: [(name, datatype, shape, struct code, value function)])
    "resnet50": ("resnet50.onnx", [("input", "FP32", [1, 3, 224, 224], "f", lambda i: (i % 255) / 255.0)]),
    "bert_base": ("bert_base.onnx", [("input_ids", "INT64", [1, 128], "q", lambda i: (i * 7919) % 30000),
                                     ("attention_mask", "INT64", [1, 128], "q", lambda i: 1)]),
}


def request_bodies(model):
    """(binary body, its JSON header length, JSON body) for one request."""
    _, inputs = MODELS[model]
    header_inputs, json_inputs, payload = [], [], b""
    for name, datatype, shape, code, value in inputs:
        count = 1
        for d in shape:
            count *= d
        values = [value(i) for i in range(count)]
        data = struct.pack(f"<{count}{code}", *values)
        header_inputs.append({"name": name, "datatype": datatype, "shape": shape,
                              "parameters": {"binary_data_size": len(data)}})
        json_inputs.append({"name": name, "datatype": datatype, "shape": shape, "data": values})
        payload += data
    header = json.dumps({"inputs": header_inputs,
                         "parameters": {"binary_data_output": True}}).encode()
    return header + payload, len(header), json.dumps({"inputs": json_inputs}).encode()


def start_server(model_file, name, threads, batching, cache, max_batch_size=16, instances=1):
    command = [ONNXKIT, "serve", model_file, "--port", "0", "--threads", str(threads),
               "--max-queue-size", "1024", "--warmup", "--instances", str(instances)]
    if batching:
        command += ["--max-batch-size", str(max_batch_size), "--max-queue-delay-us", "2000"]
    if cache:
        command += ["--cache", "local:256MiB"]
    # A session of its own, as a deployed server has: with the kernel's autogroups a server in
    # this script's session shares one CPU share with `hey`, which on a busy machine favoured
    # the unbatched server (ResNet-50 at concurrency 16, load 6: its worker waited 1.7 s of
    # 10 s for a core, the batched one's 3.6 s, at the same CPU time per image).
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)
    line = process.stdout.readline()
    if "listening on" not in line:
        raise RuntimeError(f"server for {name} did not start: {line}")
    return process, int(line.strip().rsplit(":", 1)[1])


def stop_server(process):
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=60)


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def hey(url, body_file, concurrency, duration, headers, content_type):
    """Runs hey for `duration` seconds; per-request rows (-o csv) give the percentiles (hey's
    own summary leaves p99 out below 100 requests)."""
    command = ["hey", "-z", f"{duration}s", "-c", str(concurrency), "-m", "POST", "-D", body_file,
               "-T", content_type, "-t", "60", "-o", "csv"]
    for header in headers:
        command += ["-H", header]
    output = subprocess.run(command + [url], capture_output=True, text=True, check=True).stdout
    latencies, codes, last_offset = [], {}, 0.0
    for line in output.splitlines()[1:]:
        fields = line.split(",")
        if len(fields) < 8:
            continue
        code = int(fields[6]) if fields[6].isdigit() else 0  # 0: no HTTP answer at all
        codes[code] = codes.get(code, 0) + 1
        last_offset = max(last_offset, float(fields[7]) + float(fields[0]))
        if code == 200:
            latencies.append(float(fields[0]) * 1e3)
    if not latencies:
        raise RuntimeError("hey measured no successful request:\n" + output[:2000])
    latencies.sort()
    total = sum(codes.values())
    return {"requests": total, "rps": total / max(last_offset, 1e-9),
            "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
            "codes": codes, "errors": ""}


def perf_analyzer(port, model, batching, concurrency, duration):
    """Triton's perf_analyzer at one concurrency for about `duration` seconds (three windows,
    any spread taken as stable), binary requests of one row."""
    name = os.path.splitext(MODELS[model][0])[0]
    csv = tempfile.mktemp(suffix=".csv")
    command = [PERF_ANALYZER, "-m", name, "-u", f"127.0.0.1:{port}", "-i", "http",
               "--concurrency-range", str(concurrency), "--measurement-interval", str(max(1000, duration * 1000 // 3)),
               "--stability-percentage", "100", "--max-trials", "3", "-f", csv]
    for input_name, _, shape, _, _ in MODELS[model][1]:
        # A batching model's shape leaves the batch dim out, as in Triton's config.
        command += ["--shape", f"{input_name}:" + ",".join(str(d) for d in (shape[1:] if batching else shape))]
    lib = os.path.join(os.path.dirname(os.path.dirname(PERF_ANALYZER)), "lib")
    before = model_counts(port, name)["inference_stats"]
    completed = subprocess.run(command, capture_output=True, text=True, env=dict(os.environ, LD_LIBRARY_PATH=lib))
    after = model_counts(port, name)["inference_stats"]
    if completed.returncode != 0:
        raise RuntimeError("perf_analyzer failed:\n" + completed.stdout[-2000:] + completed.stderr[-2000:])
    with open(csv) as f:
        header, row = [line.split(",") for line in f.read().splitlines()][:2]
    os.remove(csv)
    figures = dict(zip(header, row))
    failed = after["fail"]["count"] - before["fail"]["count"]
    return {"requests": after["success"]["count"] - before["success"]["count"] + failed,
            "rps": float(figures["Inferences/Second"]),
            "p50_ms": float(figures["p50 latency"]) / 1e3, "p99_ms": float(figures["p99 latency"]) / 1e3,
            "codes": {200: after["success"]["count"] - before["success"]["count"], 400: failed}, "errors": ""}


def onnxkit_bench_ms(model_file, threads, iterations):
    output = subprocess.run([ONNXKIT, "bench", model_file, "--threads", str(threads), "--iterations",
                             str(iterations), "--json"], capture_output=True, text=True, check=True).stdout
    result = json.loads(output)
    return result.get("median_ms", result.get("mean_ms"))


def process_cpu_ms(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def voluntary_switches(pid):
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
        except FileNotFoundError:
            pass  # a thread that ended meanwhile
    return total


def model_stats(port, name):
    return model_counts(port, name)["inference_stats"]


def model_counts(port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/{name}/stats") as answer:
        return json.load(answer)["model_stats"][0]


def alternate(args, model, body_file, header_length):
    """Rounds of `onnxkit bench --duration D` then the server under `hey -c 1` for D seconds."""
    model_file = os.path.join(args.models_dir, MODELS[model][0])
    name = os.path.splitext(MODELS[model][0])[0]
    ratios = []
    for round_index in range(args.alternate):
        load = os.getloadavg()[0]
        output = subprocess.run([ONNXKIT, "bench", model_file, "--threads", str(args.threads), "--duration",
                                 str(args.duration), "--json"], capture_output=True, text=True, check=True).stdout
        bench_ms = json.loads(output)["median_ms"]
        process, port = start_server(model_file, model, args.threads, False, False)
        try:
            url = f"http://127.0.0.1:{port}/v2/models/{name}/infer"
            headers = [f"Inference-Header-Content-Length: {header_length}"]
            before = model_stats(port, name)
            cpu, switches = process_cpu_ms(process.pid), voluntary_switches(process.pid)
            result = hey(url, body_file, 1, args.duration, headers, "application/octet-stream")
            cpu, switches = process_cpu_ms(process.pid) - cpu, voluntary_switches(process.pid) - switches
            after = model_stats(port, name)
        finally:
            stop_server(process)
        count = max(1, after["success"]["count"] - before["success"]["count"])
        infer_ms = (after["compute_infer"]["ns"] - before["compute_infer"]["ns"]) / count / 1e6
        ratios.append(result["p50_ms"] / bench_ms)
        print(json.dumps({"model": model, "threads": args.threads, "round": round_index, "load": round(load, 1),
                          "bench_p50_ms": round(bench_ms, 2), "server_p50_ms": round(result["p50_ms"], 2),
                          "ratio": round(ratios[-1], 3), "server_compute_infer_ms": round(infer_ms, 2),
                          "server_cpu_ms_per_request": round(cpu / count, 2),
                          "server_voluntary_switches_per_request": round(switches / count, 1)}), flush=True)
    ratios.sort()
    print(f"{model} --threads {args.threads}: median server/bench p50 ratio {ratios[len(ratios) // 2]:.3f} "
          f"over {len(ratios)} rounds", flush=True)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    global ONNXKIT
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet50,bert_base")
    parser.add_argument("--models-dir", default=os.path.join(ROOT, "bench", "models"))
    parser.add_argument("--duration", type=int, default=10, help="seconds per hey run")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--formats", default="binary,json")
    parser.add_argument("--modes", default="plain,batching,cache",
                        help="plain: no batching, no cache; instances: no batching, two at a time on "
                             "half the threads each; batching; cache (no batching); none")
    parser.add_argument("--client", choices=["hey", "perf_analyzer"], default="hey",
                        help="the load generator (perf_analyzer: binary requests only)")
    parser.add_argument("--max-batch-size", type=int, default=16, help="with batching")
    parser.add_argument("--soak", type=int, default=0,
                        help="also a SECONDS-long binary run at concurrency 8 (first model), with RSS")
    parser.add_argument("--bench-iterations", type=int, default=20)
    parser.add_argument("--alternate", type=int, default=0,
                        help="instead: ROUNDS of bench and a concurrency-1 binary run, alternating")
    parser.add_argument("--onnxkit", default=ONNXKIT, help="the onnxkit binary (another build, to compare)")
    args = parser.parse_args()
    ONNXKIT = args.onnxkit

    rows = []
    folder = tempfile.mkdtemp(prefix="serve_bench_")
    modes = [m for m in args.modes.split(",") if m and m != "none"]
    for model in args.models.split(","):
        model_file = os.path.join(args.models_dir, MODELS[model][0])
        binary, header_length, json_body = request_bodies(model)
        files = {"binary": os.path.join(folder, f"{model}.bin"), "json": os.path.join(folder, f"{model}.json")}
        with open(files["binary"], "wb") as f:
            f.write(binary)
        with open(files["json"], "wb") as f:
            f.write(json_body)
        if args.alternate:
            alternate(args, model, files["binary"], header_length)
            continue
        if not modes:
            continue
        bare_ms = onnxkit_bench_ms(model_file, args.threads, args.bench_iterations)
        print(f"{model}: onnxkit bench --threads {args.threads}: {bare_ms:.2f} ms per run", flush=True)
        for mode in modes:
            instances = 2 if mode == "instances" else 1
            process, port = start_server(model_file, model, max(1, args.threads // instances), mode == "batching",
                                         mode == "cache", args.max_batch_size, instances)
            url = f"http://127.0.0.1:{port}/v2/models/{os.path.splitext(MODELS[model][0])[0]}/infer"
            try:
                for fmt in args.formats.split(","):
                    if args.client == "perf_analyzer" and fmt != "binary":
                        continue
                    headers = [f"Inference-Header-Content-Length: {header_length}"] if fmt == "binary" else []
                    content_type = "application/octet-stream" if fmt == "binary" else "application/json"
                    for concurrency in [int(c) for c in args.concurrency.split(",")]:
                        name = os.path.splitext(MODELS[model][0])[0]
                        before, load = model_counts(port, name), os.getloadavg()[0]
                        if args.client == "perf_analyzer":
                            result = perf_analyzer(port, model, mode == "batching", concurrency, args.duration)
                        else:
                            result = hey(url, files[fmt], concurrency, args.duration, headers, content_type)
                        after = model_counts(port, name)
                        # Requests per session run: the mean batch size.
                        executions = after["execution_count"] - before["execution_count"]
                        inferences = after["inference_count"] - before["inference_count"]
                        row = {"model": model, "client": args.client, "mode": mode, "format": fmt,
                               "concurrency": concurrency,
                               **result, "bare_ms": bare_ms, "load": round(load, 1),
                               "mean_batch": round(inferences / executions, 2) if executions else None}
                        rows.append(row)
                        print(json.dumps(row), flush=True)
            finally:
                stop_server(process)

    if args.soak:
        model = args.models.split(",")[0]
        model_file = os.path.join(args.models_dir, MODELS[model][0])
        process, port = start_server(model_file, model, args.threads, True, False)
        url = f"http://127.0.0.1:{port}/v2/models/{os.path.splitext(MODELS[model][0])[0]}/infer"
        _, header_length, _ = request_bodies(model)
        try:
            # RSS after a short warm run, then after the soak.
            hey(url, os.path.join(folder, f"{model}.bin"), 8, 5, [f"Inference-Header-Content-Length: {header_length}"],
                "application/octet-stream")
            before = rss_kb(process.pid)
            result = hey(url, os.path.join(folder, f"{model}.bin"), 8, args.soak,
                         [f"Inference-Header-Content-Length: {header_length}"], "application/octet-stream")
            after = rss_kb(process.pid)
            print(json.dumps({"soak_seconds": args.soak, "model": model, "concurrency": 8, **result,
                              "rss_before_kb": before, "rss_after_kb": after,
                              "rss_growth_pct": 100.0 * (after - before) / before}), flush=True)
        finally:
            print(f"server exit code {stop_server(process)}", flush=True)

    shutil.rmtree(folder, ignore_errors=True)
    if not rows:
        return 0
    print("\n| model | mode | format | conc | req/s | p50 ms | p99 ms | non-200 | mean batch | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        bad = sum(n for c, n in r["codes"].items() if c != 200) + (1 if r["errors"] else 0)
        print(f"| {r['model']} | {r['mode']} | {r['format']} | {r['concurrency']} | {r['rps']:.1f} | "
              f"{r['p50_ms']:.1f} | {r['p99_ms']:.1f} | {bad} | {r['mean_batch']} | {r['load']} |")


if __name__ == "__main__":
    sys.exit(main())
