"""End-to-end tests of `onnxkit serve`: a real server on a free loopback port, called with the
stock Open Inference Protocol clients (tritonclient.http, the KServe SDK's InferenceRESTClient)
and with raw HTTP for what stock clients never send. Run by CTest (serve_e2e):

    .venv-serve/bin/python tests/serve/serve_e2e_test.py --onnxkit build/onnxkit
"""

import argparse
import asyncio
import gzip
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import zlib

import httpx
import kserve
import numpy as np
import tritonclient.http as httpclient
from kserve.protocol.infer_type import RequestedOutput
import tritonclient.utils.shared_memory as shm
from tritonclient.utils import InferenceServerException

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ONNXKIT = os.path.join(ROOT, "build", "onnxkit")
PERF_ANALYZER = os.path.join(ROOT, ".venv-serve", "perf_analyzer", "bin", "perf_analyzer")
TINY_CNN = os.path.join(ROOT, "examples", "models", "tiny_cnn.onnx")  # input [batch,3,32,32]
BERT_TINY = os.path.join(ROOT, "tests", "data", "models", "bert_tiny", "model.onnx")
LSTM = os.path.join(ROOT, "tests", "data", "models", "lstm_state_tiny", "model.onnx")


def process_cpu_seconds(pid):
    """User + system CPU time of a process so far, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_repository(folder, models):
    """models: {name: (file, config dict or None)} -> NAME/1/model.onnx (+ config.json)."""
    for name, (file, config) in models.items():
        os.makedirs(os.path.join(folder, name, "1"))
        shutil.copy(file, os.path.join(folder, name, "1", "model.onnx"))
        if config is not None:
            with open(os.path.join(folder, name, "config.json"), "w") as f:
                json.dump(config, f)
    return folder


class Server:
    """`onnxkit serve ARGS --port 0`, its port read from its first line."""

    def __init__(self, *args, env=None, port_flag=True, preexec_fn=None):
        command = [ONNXKIT, "serve", *args, "--threads", "1"]
        if port_flag:
            command += ["--port", "0"]
        # stderr to a file: a pipe nobody reads could fill up and block the server.
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.stderr,
                                        text=True, env=env, preexec_fn=preexec_fn)
        line = self.process.stdout.readline()
        if "listening on" not in line:
            self.process.kill()
            self.process.wait()
            raise RuntimeError("server did not start: " + line + self.errors())
        self.port = int(line.strip().rsplit(":", 1)[1])
        self.url = f"127.0.0.1:{self.port}"

    def client(self, **kwargs):
        return httpclient.InferenceServerClient(url=self.url, **kwargs)

    def stop(self):
        """SIGTERM; returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
            if code != 0:
                print(f"server exited {code}; its stderr:\n{self.errors()}", file=sys.stderr)
            return code
        finally:
            self.process.stdout.close()
            self.stderr.close()

    def errors(self):
        self.stderr.seek(0)
        return self.stderr.read()

    def request(self, method, path, body=b"", headers=None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()


def image(seed, rows=1):
    return np.random.default_rng(seed).standard_normal((rows, 3, 32, 32)).astype(np.float32)


def cnn_input(data, binary=True):
    tensor = httpclient.InferInput("input", list(data.shape), "FP32")
    tensor.set_data_from_numpy(data, binary_data=binary)
    return tensor


def reference_logits(data, folder):
    """What `onnxkit run` computes for the same input."""
    np.save(os.path.join(folder, "input.npy"), data)
    subprocess.run([ONNXKIT, "run", TINY_CNN, "--input", "input=" + os.path.join(folder, "input.npy"),
                    "--output-dir", folder], check=True, capture_output=True)
    return np.load(os.path.join(folder, "logits.npy"))


class ClassServerTest(unittest.TestCase):
    """Its setUpClass starts cls.server (with cls.client) over files in cls.folder; both go
    after the class, and the server must exit 0."""

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        code = cls.server.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)
        assert code == 0, f"server exited {code}"


class ServeTest(ClassServerTest):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxkit_serve_test_")
        repository = make_repository(os.path.join(cls.folder, "repo"), {
            "tiny_cnn": (TINY_CNN, {"max_batch_size": 8,
                                    "dynamic_batching": {"max_queue_delay_microseconds": 20000},
                                    "labels": {"logits": "labels.txt"}}),
            "bert_tiny": (BERT_TINY, None),
            "lstm": (LSTM, None),
            "tiny cnn+1": (TINY_CNN, None),  # a name a URL carries percent-encoded
        })
        # Labels for classes 0-8 of tiny_cnn's 10: class 9 is answered without one.
        with open(os.path.join(repository, "tiny_cnn", "labels.txt"), "w") as f:
            f.write("".join(f"class {i}\r\n" for i in range(9)))
        cls.server = Server("--model-repository", repository)
        cls.client = cls.server.client(concurrency=8)

    def test_health_and_metadata(self):
        self.assertTrue(self.client.is_server_live())
        self.assertTrue(self.client.is_server_ready())
        self.assertTrue(self.client.is_model_ready("tiny_cnn"))
        self.assertFalse(self.client.is_model_ready("nope"))
        metadata = self.client.get_server_metadata()
        self.assertEqual(metadata["name"], "onnxkit")
        for extension in ("binary_tensor_data", "model_repository", "statistics"):
            self.assertIn(extension, metadata["extensions"])
        model = self.client.get_model_metadata("bert_tiny")
        self.assertEqual([i["name"] for i in model["inputs"]], ["input_ids", "attention_mask"])
        self.assertEqual(model["inputs"][0]["datatype"], "INT64")
        self.assertEqual(model["inputs"][0]["shape"], [-1, -1])
        self.assertEqual(self.client.get_model_metadata("tiny_cnn", model_version="1")["versions"],
                         ["1"])

    def test_binary_and_json_give_what_onnxkit_run_gives(self):
        data = image(1)
        expected = reference_logits(data, self.folder)
        binary = self.client.infer("tiny_cnn", [cnn_input(data)], request_id="req-7",
                                   outputs=[httpclient.InferRequestedOutput("logits", binary_data=True)])
        np.testing.assert_allclose(binary.as_numpy("logits"), expected, rtol=1e-4, atol=1e-5)
        self.assertEqual(binary.get_response()["id"], "req-7")
        as_json = self.client.infer("tiny_cnn", [cnn_input(data, binary=False)],
                                    outputs=[httpclient.InferRequestedOutput("logits", binary_data=False)])
        np.testing.assert_allclose(as_json.as_numpy("logits"), expected, rtol=1e-4, atol=1e-5)
        self.assertIn("data", as_json.get_response()["outputs"][0])
        # No outputs named: the client asks for all of them in binary.
        default = self.client.infer("tiny_cnn", [cnn_input(data)])
        np.testing.assert_allclose(default.as_numpy("logits"), expected, rtol=1e-4, atol=1e-5)

    def test_classification_answers_the_top_classes_with_their_labels(self):
        data = image(11, rows=3)
        expected = reference_logits(data, self.folder)
        for binary in (True, False):
            result = self.client.infer("tiny_cnn", [cnn_input(data)], outputs=[
                httpclient.InferRequestedOutput("logits", binary_data=binary, class_count=4)])
            output = result.get_output("logits")
            self.assertEqual((output["datatype"], output["shape"]), ("BYTES", [3, 4]))
            classes = result.as_numpy("logits")
            self.assertEqual(classes.shape, (3, 4))
            for row in range(3):
                top = np.argsort(-expected[row], kind="stable")[:4]
                for k, entry in enumerate(classes[row]):
                    text = entry.decode() if isinstance(entry, bytes) else entry
                    value, index, *label = text.split(":")
                    self.assertEqual(int(index), top[k], text)
                    self.assertAlmostEqual(float(value), expected[row][top[k]], places=4)
                    self.assertEqual(label, [f"class {top[k]}"] if top[k] < 9 else [], text)
        # A model without labels: "<value>:<index>"; a count past the classes gives them all.
        result = self.client.infer("tiny cnn+1", [cnn_input(data[:1])], outputs=[
            httpclient.InferRequestedOutput("logits", class_count=50)])
        entries = [e.decode() for e in result.as_numpy("logits")[0]]
        self.assertEqual(len(entries), 10)
        self.assertEqual([int(e.split(":")[1]) for e in entries],
                         list(np.argsort(-expected[0], kind="stable")))
        self.assertTrue(all(e.count(":") == 1 for e in entries))
        self.assertIn("classification", self.client.get_server_metadata()["extensions"])
        # A count that is not a positive integer, and classes of an int64 output the model has
        # none of: 400s naming the output.
        body = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                       "data": [0.0] * 3072}],
                           "outputs": [{"name": "logits", "parameters": {"classification": 0}}]})
        status, _, answer = self.server.request("POST", "/v2/models/tiny_cnn/infer", body)
        self.assertEqual(status, 400)
        self.assertIn("output 'logits': parameter 'classification' must be a positive integer",
                      json.loads(answer)["error"])

    def test_model_config_has_tritons_fields(self):
        config = self.client.get_model_config("tiny_cnn")
        self.assertEqual(config["max_batch_size"], 8)
        # The batch dim is left out of dims when the model batches, as in Triton's config.
        self.assertEqual(config["input"], [{"name": "input", "data_type": "TYPE_FP32",
                                            "dims": [3, 32, 32], "format": "FORMAT_NONE"}])
        self.assertEqual(config["output"], [{"name": "logits", "data_type": "TYPE_FP32",
                                             "dims": [10], "label_filename": "labels.txt"}])
        self.assertEqual(config["instance_group"], [{"kind": "KIND_CPU", "count": 1}])
        bert = self.client.get_model_config("bert_tiny")
        self.assertEqual(bert["max_batch_size"], 0)
        self.assertEqual([(i["data_type"], i["dims"]) for i in bert["input"]],
                         [("TYPE_INT64", [-1, -1])] * 2)

    def test_requested_outputs_only_and_int64_inputs(self):
        ids = np.array([[1, 5, 9, 3]], dtype=np.int64)
        inputs = [httpclient.InferInput("input_ids", [1, 4], "INT64"),
                  httpclient.InferInput("attention_mask", [1, 4], "INT64")]
        inputs[0].set_data_from_numpy(ids)
        inputs[1].set_data_from_numpy(np.ones_like(ids), binary_data=False)
        result = self.client.infer("bert_tiny", inputs,
                                   outputs=[httpclient.InferRequestedOutput("pooler_output")])
        names = [o["name"] for o in result.get_response()["outputs"]]
        self.assertEqual(names, ["pooler_output"])
        self.assertEqual(result.as_numpy("pooler_output").shape, (1, 32))

    def test_model_without_batch_dim_serves(self):
        inputs = []
        for name, shape in (("input", [1, 5]), ("h", [2, 1, 16]), ("c", [2, 1, 16])):
            tensor = httpclient.InferInput(name, shape, "FP32")
            tensor.set_data_from_numpy(np.zeros(shape, dtype=np.float32))
            inputs.append(tensor)
        result = self.client.infer("lstm", inputs)
        self.assertEqual(result.as_numpy("hn").shape, (2, 1, 16))

    def test_concurrent_requests_are_batched_and_each_gets_its_own_rows(self):
        datas = [image(100 + i) for i in range(24)]
        pending = [self.client.async_infer("tiny_cnn", [cnn_input(d)]) for d in datas]
        results = [p.get_result().as_numpy("logits") for p in pending]
        batch = self.client.infer("tiny_cnn", [cnn_input(np.concatenate(datas[:8]))])
        np.testing.assert_allclose(np.concatenate(results[:8]), batch.as_numpy("logits"),
                                   rtol=1e-4, atol=1e-5)
        stats = self.client.get_inference_statistics("tiny_cnn")["model_stats"][0]
        self.assertLess(stats["execution_count"], stats["inference_count"])
        self.assertTrue(any(b["batch_size"] > 1 for b in stats["batch_stats"]), stats["batch_stats"])
        for field in ("success", "fail", "queue", "compute_input", "compute_infer",
                      "compute_output", "cache_hit", "cache_miss"):
            self.assertIn(field, stats["inference_stats"])
        self.assertGreaterEqual(stats["inference_stats"]["success"]["count"], 25)
        everything = self.client.get_inference_statistics()["model_stats"]
        self.assertEqual(sorted(s["name"] for s in everything), ["bert_tiny", "lstm", "tiny cnn+1", "tiny_cnn"])
        # inference_count counts batch rows, as Triton's does (inference / execution count is
        # the mean batch size); the Prometheus counter agrees.
        self.client.infer("tiny_cnn", [cnn_input(image(200, rows=5))])
        after = self.client.get_inference_statistics("tiny_cnn")["model_stats"][0]
        self.assertEqual(after["inference_count"] - stats["inference_count"], 5)
        self.assertEqual(after["execution_count"] - stats["execution_count"], 1)
        self.assertEqual(after["inference_stats"]["success"]["count"]
                         - stats["inference_stats"]["success"]["count"], 1)
        _, _, metrics = self.server.request("GET", "/metrics")
        counter = [line for line in metrics.decode().splitlines()
                   if line.startswith("onnxkit_inference_count{") and 'model="tiny_cnn"' in line]
        self.assertEqual(float(counter[0].rsplit(" ", 1)[1]), after["inference_count"], counter)

    def test_errors_have_status_and_message(self):
        cases = [
            (lambda: self.client.infer("nope", [cnn_input(image(0))]), "404", "unknown model"),
            (lambda: self.client.infer("tiny_cnn", [cnn_input(image(0))], model_version="9"),
             "404", "unknown version"),
            (lambda: self.client.get_inference_statistics("nope"), "404", "unknown model"),
        ]
        wrong_type = httpclient.InferInput("input", [1, 3, 32, 32], "FP64")
        wrong_type.set_data_from_numpy(image(0).astype(np.float64))
        cases.append((lambda: self.client.infer("tiny_cnn", [wrong_type]), "400", "FP32"))
        wrong_shape = cnn_input(np.zeros((1, 3, 16, 16), dtype=np.float32))
        cases.append((lambda: self.client.infer("tiny_cnn", [wrong_shape]), "400", "shape"))
        missing = [httpclient.InferInput("input_ids", [1, 4], "INT64")]
        missing[0].set_data_from_numpy(np.ones((1, 4), dtype=np.int64))
        cases.append((lambda: self.client.infer("bert_tiny", missing), "400",
                      "missing input 'attention_mask'"))
        for call, status, text in cases:
            with self.assertRaises(InferenceServerException) as raised:
                call()
            self.assertEqual(raised.exception.status(), status, raised.exception.message())
            self.assertIn(text, raised.exception.message())

    def test_metrics(self):
        self.client.infer("tiny_cnn", [cnn_input(image(3))])
        status, headers, body = self.server.request("GET", "/metrics")
        self.assertEqual(status, 200)
        text = body.decode()
        for name in ("onnxkit_inference_request_success", "onnxkit_inference_request_failure",
                     "onnxkit_inference_count", "onnxkit_inference_exec_count",
                     "onnxkit_inference_pending_request_count",
                     "onnxkit_inference_request_duration_us", "onnxkit_inference_queue_duration_us",
                     "onnxkit_inference_compute_input_duration_us",
                     "onnxkit_inference_compute_infer_duration_us",
                     "onnxkit_inference_compute_output_duration_us",
                     "onnxkit_inference_request_seconds_bucket", "onnxkit_cache_num_hits_per_model",
                     "onnxkit_process_cpu_seconds", "onnxkit_process_resident_memory_bytes"):
            self.assertIn(name, text)
        self.assertIn('onnxkit_inference_request_success{model="tiny_cnn",version="1"}', text)
        self.assertIn('reason="REJECTED"', text)

    def test_raw_protocol_edge_cases(self):
        path = "/v2/models/tiny_cnn/infer"
        header = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                         "parameters": {"binary_data_size": 12288}}]}).encode()
        data = image(5).tobytes()

        def post(body, headers):
            return self.server.request("POST", path, body, headers)

        status, headers, body = post(header + data, {"Inference-Header-Content-Length": str(len(header))})
        self.assertEqual(status, 200, body)
        self.assertEqual(headers["Content-Type"], "application/json")
        cases = [
            (b"{not json", {}, 400, "malformed JSON"),
            (b"", {}, 400, "malformed JSON"),
            (header + data[:-4], {"Inference-Header-Content-Length": str(len(header))}, 400, "past the end"),
            (header + data + b"xx", {"Inference-Header-Content-Length": str(len(header))}, 400, "beyond"),
            (header + data, {"Inference-Header-Content-Length": "12x"}, 400, "not a number"),
            (header + data, {"Inference-Header-Content-Length": str(len(header) + 99999)}, 400,
             "larger than the body"),
            (header + data, {}, 400, "malformed JSON"),
            (header + data, {"Inference-Header-Content-Length": str(len(header)),
                             "Content-Encoding": "br"}, 415, "br"),
            (header + data, {"Inference-Header-Content-Length": str(len(header)),
                             "Content-Encoding": "gzip"}, 400, "not valid gzip"),
        ]
        for body_in, headers_in, expected, text in cases:
            status, _, body = post(body_in, headers_in)
            self.assertEqual(status, expected, (headers_in, body))
            self.assertIn(text, json.loads(body)["error"])
        for method, target, expected in (("GET", "/v3", 404), ("GET", "/v2/nothing", 404),
                                         ("GET", path, 405), ("DELETE", "/v2", 405),
                                         ("GET", "/v2/models/tiny_cnn/versions/1/ready", 200),
                                         ("GET", "/v2/models/tiny_cnn/config", 200)):
            status, _, body = self.server.request(method, target)
            self.assertEqual(status, expected, (method, target, body))
        # Binary output: the JSON part's length in the header, the tensor's bytes after it.
        request = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                          "data": image(5).ravel().tolist()}],
                              "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]})
        status, headers, body = post(request.encode(), {})
        self.assertEqual(status, 200)
        length = int(headers["Inference-Header-Content-Length"])
        response = json.loads(body[:length])
        self.assertEqual(response["outputs"][0]["parameters"]["binary_data_size"], 40)
        self.assertEqual(len(body), length + 40)

    def test_compressed_bodies_and_responses(self):
        path = "/v2/models/tiny_cnn/infer"
        data = image(6)
        header = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                         "parameters": {"binary_data_size": data.nbytes}}]}).encode()
        binary_headers = {"Inference-Header-Content-Length": str(len(header))}
        status, _, plain = self.server.request("POST", path, header + data.tobytes(), binary_headers)
        self.assertEqual(status, 200, plain)
        expected = json.loads(plain)["outputs"][0]["data"]
        status, _, body = self.server.request("POST", path, gzip.compress(header + data.tobytes()),
                                              {**binary_headers, "Content-Encoding": "gzip"})
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["outputs"][0]["data"], expected)
        as_json = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                          "data": data.ravel().tolist()}]}).encode()
        status, _, body = self.server.request("POST", path, zlib.compress(as_json),
                                              {"Content-Encoding": "deflate"})
        self.assertEqual(status, 200, body)
        np.testing.assert_allclose(json.loads(body)["outputs"][0]["data"], expected, rtol=1e-6)
        # Answers are gzipped for clients that accept it (when large enough to gain).
        status, headers, body = self.server.request("GET", "/metrics", headers={"Accept-Encoding": "gzip"})
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("Content-Encoding"), "gzip")
        self.assertIn(b"onnxkit_inference_request_success", gzip.decompress(body))
        status, headers, body = self.server.request("GET", "/metrics")
        self.assertNotIn("Content-Encoding", headers)
        self.assertIn(b"onnxkit_inference_request_success", body)

    def test_model_names_in_urls_are_percent_decoded(self):
        name = "tiny cnn+1"
        quoted = urllib.parse.quote(name, safe="")
        status, _, body = self.server.request("GET", f"/v2/models/{quoted}")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["name"], name)
        status, _, body = self.server.request("GET", f"/v2/models/{quoted}/versions/%31/ready")
        self.assertEqual(status, 200, body)
        data = image(7)
        result = self.client.infer(name, [cnn_input(data)])
        np.testing.assert_allclose(result.as_numpy("logits"),
                                   self.client.infer("tiny_cnn", [cnn_input(data)]).as_numpy("logits"),
                                   rtol=1e-6)
        for bad in ("/v2/models/tiny%2/ready", "/v2/models/tiny%zzcnn/infer", "/v2/models/a%00b"):
            status, _, body = self.server.request("GET", bad)
            self.assertEqual(status, 400, bad)
            self.assertIn(f"malformed path '{bad}'", json.loads(body)["error"])

    def test_keep_alive_and_bad_http(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            for _ in range(3):  # three requests on one connection
                s.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
                reply = s.recv(4096)
                self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 400"))
        # HEAD: GET's headers, Content-Length included, and no body; the connection goes on.
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(b"HEAD /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n"
                      b"GET /v2/health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = b""
            while reply.count(b"HTTP/1.1 200") < 2 or not reply.endswith(b"}"):
                chunk = s.recv(4096)
                self.assertTrue(chunk, reply)
                reply += chunk
            head, get = reply.split(b"HTTP/1.1 200 OK")[1:]
            self.assertIn(b"Content-Length: 14\r\n", head)
            self.assertTrue(head.endswith(b"\r\n\r\n"), head)
            self.assertTrue(get.endswith(b'{"live":true}'), get)
        # "Expect: 100-continue" (curl, .NET and Java clients on large bodies): the interim
        # answer comes before the body is sent, then the real one; a body past the limit is
        # refused at once.
        body = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                       "data": image(5).ravel().tolist()}]}).encode()
        head = (b"POST /v2/models/tiny_cnn/infer HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nExpect: 100-continue\r\n")
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body))
            self.assertEqual(s.recv(4096), b"HTTP/1.1 100 Continue\r\n\r\n")
            s.sendall(body)
            reply = b""
            while b'"outputs"' not in reply:
                chunk = s.recv(65536)
                self.assertTrue(chunk, reply)
                reply += chunk
            self.assertTrue(reply.startswith(b"HTTP/1.1 200"), reply[:200])
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(head + b"Content-Length: %d\r\n\r\n" % (1 << 40))
            reply = s.recv(4096)
            self.assertTrue(reply.startswith(b"HTTP/1.1 413"), reply)

    def test_load_and_unload_under_traffic(self):
        stop = threading.Event()
        problems = []
        counts = {"ok": 0, "unavailable": 0}
        data = image(9)
        expected = self.client.infer("tiny_cnn", [cnn_input(data)]).as_numpy("logits")

        def traffic():
            client = self.server.client()
            while not stop.is_set():
                try:
                    result = client.infer("tiny_cnn", [cnn_input(data)])
                    if not np.allclose(result.as_numpy("logits"), expected, rtol=1e-4, atol=1e-5):
                        problems.append("wrong result")
                    counts["ok"] += 1
                except InferenceServerException as e:
                    if e.status() in ("404", "503"):
                        counts["unavailable"] += 1
                    else:
                        problems.append(f"{e.status()}: {e.message()}")
                except Exception as e:  # a dropped connection, a crash
                    problems.append(repr(e))
            client.close()

        threads = [threading.Thread(target=traffic) for _ in range(4)]
        for t in threads:
            t.start()
        try:
            for _ in range(3):
                self.client.unload_model("tiny_cnn")
                self.assertFalse(self.client.is_model_ready("tiny_cnn"))
                index = {m["name"]: m for m in self.client.get_model_repository_index()}
                self.assertEqual(index["tiny_cnn"]["state"], "UNAVAILABLE")
                time.sleep(0.05)
                self.client.load_model("tiny_cnn")
                self.assertTrue(self.client.is_model_ready("tiny_cnn"))
                time.sleep(0.05)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(problems, [])
        self.assertGreater(counts["ok"], 0)
        index = {m["name"]: m for m in self.client.get_model_repository_index()}
        self.assertEqual(index["tiny_cnn"]["state"], "READY")
        with self.assertRaises(InferenceServerException) as raised:
            self.client.load_model("not_in_repository")
        self.assertEqual(raised.exception.status(), "404")


class ServerOptionsTest(unittest.TestCase):
    """Servers started with particular flags."""

    def test_limits_and_slow_clients(self):
        server = Server(TINY_CNN, "--max-header-bytes", "2048", "--max-body-bytes", "100000",
                        "--read-timeout-ms", "500", "--max-tensor-elements", "1000")
        try:
            status, _, body = server.request("GET", "/v2", headers={"X-Big": "a" * 4096})
            self.assertEqual(status, 431)
            big = json.dumps({"inputs": [{"name": "input", "shape": [8, 3, 32, 32], "datatype": "FP32",
                                          "data": [0.5] * (8 * 3072)}]}).encode()
            status, _, body = server.request("POST", "/v2/models/tiny_cnn/infer", big)
            self.assertEqual(status, 413, body)
            small = json.dumps({"inputs": [{"name": "input", "shape": [1, 3, 32, 32], "datatype": "FP32",
                                            "data": [0.5] * 3072}]}).encode()
            status, _, body = server.request("POST", "/v2/models/tiny_cnn/infer", small)
            self.assertEqual(status, 400)
            self.assertIn("limit", json.loads(body)["error"])
            # A client that stops halfway through its request is cut off.
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(b"POST /v2/models/tiny_cnn/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
                start = time.monotonic()
                self.assertEqual(s.recv(4096), b"")  # closed by the server
                self.assertLess(time.monotonic() - start, 5)
            self.assertTrue(server.client().is_server_live())
        finally:
            self.assertEqual(server.stop(), 0)

    def test_zip_bomb_is_413(self):
        server = Server(TINY_CNN, "--max-body-bytes", "100000")
        try:
            bomb = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
            self.assertLess(len(bomb), 100000)
            status, _, body = server.request("POST", "/v2/models/tiny_cnn/infer", bomb,
                                             {"Content-Encoding": "gzip"})
            self.assertEqual(status, 413, body)
            self.assertIn("limit of 100000 bytes", json.loads(body)["error"])
            self.assertTrue(server.client().is_server_live())
        finally:
            self.assertEqual(server.stop(), 0)

    def test_connections_past_the_limit_get_503(self):
        server = Server(TINY_CNN, "--max-connections", "2")
        held = []
        try:
            for _ in range(2):
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
                connection.request("GET", "/v2/health/live")
                self.assertEqual(connection.getresponse().read(), b'{"live":true}')
                held.append(connection)  # kept alive, so still open
            status, headers, body = server.request("GET", "/v2/health/live")
            self.assertEqual(status, 503, body)
            self.assertIn("limit of 2 connections", json.loads(body)["error"])
            self.assertEqual(headers.get("Connection"), "close")
            held.pop().close()
            deadline = time.monotonic() + 10
            while True:  # the server notices the close asynchronously
                status, _, _ = server.request("GET", "/v2/health/live")
                if status == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            self.assertEqual(status, 200)
        finally:
            for connection in held:
                connection.close()
            self.assertEqual(server.stop(), 0)

    def test_out_of_file_descriptors_the_server_waits_and_recovers(self):
        # The server gets few descriptors; clients hold connections open until accept fails
        # with EMFILE. It must say so once, not spin on the failing accept, and serve again
        # once connections close.
        limit = 48
        server = Server(TINY_CNN, env=None, preexec_fn=lambda: resource.setrlimit(
            resource.RLIMIT_NOFILE, (limit, limit)))
        held = []
        try:
            for _ in range(limit + 8):
                held.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
            deadline = time.monotonic() + 10
            while "accepting a connection failed" not in server.errors():
                self.assertLess(time.monotonic(), deadline, server.errors())
                time.sleep(0.05)
            before = process_cpu_seconds(server.process.pid)
            time.sleep(1.0)
            spent = process_cpu_seconds(server.process.pid) - before
            self.assertLess(spent, 0.5, "the accept loop spins while out of descriptors")
            self.assertEqual(server.errors().count("accepting a connection failed"), 1)
            for connection in held:
                connection.close()
            held.clear()
            deadline = time.monotonic() + 10
            while True:  # the server notices the closes asynchronously
                try:
                    status, _, body = server.request("GET", "/v2/health/live")
                except OSError:
                    status = None
                if status == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            self.assertEqual(status, 200)
        finally:
            for connection in held:
                connection.close()
            self.assertEqual(server.stop(), 0)

    def test_bearer_token(self):
        folder = tempfile.mkdtemp()
        try:
            token_file = os.path.join(folder, "token")
            with open(token_file, "w") as f:
                f.write("s3cret\n")
            server = Server(TINY_CNN, "--auth-token-file", token_file)
            try:
                self.assertEqual(server.request("GET", "/v2/health/live")[0], 200)
                self.assertEqual(server.request("GET", "/v2/health/ready")[0], 200)
                for path in ("/v2", "/v2/models/tiny_cnn", "/metrics", "/v2/models/stats"):
                    self.assertEqual(server.request("GET", path)[0], 401, path)
                    self.assertEqual(server.request("GET", path, headers={"Authorization": "Bearer nope"})[0],
                                     401, path)
                client = server.client()
                good = {"Authorization": "Bearer s3cret"}
                result = client.infer("tiny_cnn", [cnn_input(image(1))], headers=good)
                self.assertEqual(result.as_numpy("logits").shape, (1, 10))
                with self.assertRaises(InferenceServerException) as raised:
                    client.infer("tiny_cnn", [cnn_input(image(1))])
                self.assertEqual(raised.exception.status(), "401")
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            shutil.rmtree(folder)

    def test_full_queue_answers_503(self):
        server = Server(TINY_CNN, "--max-batch-size", "64", "--max-queue-delay-us", "1500000",
                        "--max-queue-size", "2")
        try:
            client = server.client(concurrency=4)
            pending = [client.async_infer("tiny_cnn", [cnn_input(image(i))]) for i in range(3)]
            outcomes = []
            for p in pending:
                try:
                    p.get_result()
                    outcomes.append("200")
                except InferenceServerException as e:
                    outcomes.append(e.status())
                    self.assertIn("queue full", e.message())
            self.assertEqual(sorted(outcomes), ["200", "200", "503"])
            _, _, body = server.request("GET", "/metrics")
            self.assertIn('onnxkit_inference_request_failure{model="tiny_cnn",reason="REJECTED",version="1"} 1',
                          body.decode())
        finally:
            self.assertEqual(server.stop(), 0)

    def test_warmup_on_every_instance_then_batches_answer_each_request(self):
        # --warmup runs every batch size 4..1 on both workers before the server listens.
        server = Server(TINY_CNN, "--warmup", "--instances", "2", "--max-batch-size", "4",
                        "--max-queue-delay-us", "100000")
        try:
            self.assertNotIn("warmup", server.errors())
            client = server.client(concurrency=3)
            datas = [image(300 + i) for i in range(3)]
            pending = [client.async_infer("tiny_cnn", [cnn_input(d)]) for d in datas]
            results = [p.get_result().as_numpy("logits") for p in pending]
            whole = client.infer("tiny_cnn", [cnn_input(np.concatenate(datas))]).as_numpy("logits")
            np.testing.assert_allclose(np.concatenate(results), whole, rtol=1e-4, atol=1e-5)
            stats = client.get_inference_statistics("tiny_cnn")["model_stats"][0]
            # 3 rows one by one, then 3 in one request; the warm-up runs are no requests.
            self.assertEqual(stats["inference_count"], 6)
            self.assertEqual(stats["inference_stats"]["success"]["count"], 4)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_sigterm_answers_requests_in_flight_then_exits_0(self):
        server = Server(TINY_CNN, "--max-batch-size", "64", "--max-queue-delay-us", "3000000")
        results = []

        def send(seed):  # a thread each: tritonclient's async requests only go out under gevent
            client = server.client()
            try:
                results.append(client.infer("tiny_cnn", [cnn_input(image(seed))]).as_numpy("logits").shape)
            except Exception as e:
                results.append(repr(e))
            client.close()

        threads = [threading.Thread(target=send, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        try:
            # Until all four wait in the queue for their batch (3 s delay).
            deadline = time.monotonic() + 10
            queued = 'onnxkit_inference_pending_request_count{model="tiny_cnn",version="1"} 4'
            while queued not in server.request("GET", "/metrics")[2].decode():
                self.assertLess(time.monotonic(), deadline, "the requests never reached the queue")
                time.sleep(0.02)
            server.process.send_signal(signal.SIGTERM)
            for t in threads:
                t.join()
            self.assertEqual(results, [(1, 10)] * 4)
            # The answers can arrive before the server has finished exiting: wait for it,
            # rather than have stop() send a second SIGTERM, which ends it at once (-15).
            server.process.wait(timeout=30)
        finally:
            self.assertEqual(server.stop(), 0)  # SIGTERM again if the test failed before it
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()

    def test_port_from_environment_and_model_file_errors(self):
        port = free_port()
        server = Server(TINY_CNN, env={**os.environ, "PORT": str(port)}, port_flag=False)
        try:
            self.assertEqual(server.port, port)
        finally:
            self.assertEqual(server.stop(), 0)
        failed = subprocess.run([ONNXKIT, "serve", "/nonexistent.onnx", "--port", "0"],
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(failed.returncode, 1)
        self.assertIn("/nonexistent.onnx", failed.stderr)

    def test_load_requests_carry_a_config_and_the_model_files(self):
        # tritonclient's load_model(config=..., files=...): Triton's load parameters.
        folder = tempfile.mkdtemp()
        try:
            repository = make_repository(os.path.join(folder, "repo"), {"tiny_cnn": (TINY_CNN, None)})
            scratch = os.path.join(folder, "tmp")
            os.makedirs(scratch)
            server = Server("--model-repository", repository, env=dict(os.environ, TMPDIR=scratch))
            try:
                client = server.client()
                self.assertEqual(client.get_model_config("tiny_cnn")["max_batch_size"], 0)
                client.load_model("tiny_cnn", config=json.dumps({"max_batch_size": 4}))
                self.assertEqual(client.get_model_config("tiny_cnn")["max_batch_size"], 4)
                # A config in Triton's own format: its fields are named, the model keeps serving.
                with self.assertRaises(InferenceServerException) as raised:
                    client.load_model("tiny_cnn", config=json.dumps({"platform": "onnxruntime_onnx"}))
                self.assertIn("the load request's config: unknown field 'platform'", str(raised.exception))
                self.assertTrue(client.is_model_ready("tiny_cnn"))

                # A model that is not in the repository, uploaded with a label file.
                with open(TINY_CNN, "rb") as f:
                    model_bytes = f.read()
                client.load_model("uploaded", config=json.dumps({"labels": {"logits": "labels.txt"}}),
                                  files={"file:1/model.onnx": model_bytes, "file:labels.txt": b"zero\none\n"})
                self.assertTrue(client.is_model_ready("uploaded"))
                data = image(21)
                result = client.infer("uploaded", [cnn_input(data)], outputs=[
                    httpclient.InferRequestedOutput("logits", class_count=10)])
                expected = client.infer("tiny_cnn", [cnn_input(data)]).as_numpy("logits")
                for entry in result.as_numpy("logits")[0]:
                    index = int(entry.decode().split(":")[1])
                    label = {0: ":zero", 1: ":one"}.get(index, "")
                    self.assertTrue(entry.decode().endswith(f":{index}{label}"), entry)
                self.assertEqual(int(result.as_numpy("logits")[0][0].decode().split(":")[1]),
                                 int(np.argmax(expected[0])))
                self.assertEqual(os.listdir(scratch), [], "the uploaded files stay behind")

                # Bad load requests: 400s naming the parameter; nothing written is left.
                bad = [
                    ({"files": {"file:../1/model.onnx": model_bytes}}, "without '..'"),
                    ({"files": {"file:/etc/x/1/model.onnx": model_bytes}}, "without '..'"),
                    ({"files": {"file:labels.txt": b"a"}}, "no VERSION/model.onnx"),
                    ({"config": json.dumps({"labels": {"logits": "../../etc/passwd"}})},
                     "relative to the model's folder"),
                    ({"config": "{not json"}, "'config' is not JSON"),
                ]
                # A file that is no model: named as the request named it, and listed as failed.
                with self.assertRaises(InferenceServerException) as raised:
                    client.load_model("garbage", files={"file:1/model.onnx": b"not a model"})
                self.assertIn("file:1/model.onnx: not a valid ONNX file", str(raised.exception))
                self.assertNotIn(scratch, str(raised.exception))
                index = {m["name"]: m for m in client.get_model_repository_index()}
                self.assertEqual(index["garbage"]["state"], "UNAVAILABLE")
                self.assertIn("file:1/model.onnx", index["garbage"]["reason"])
                for arguments, message in bad:
                    with self.assertRaises(InferenceServerException) as raised:
                        client.load_model("uploaded" if "files" in arguments else "tiny_cnn",
                                          **arguments)
                    self.assertIn(message, str(raised.exception), arguments)
                for body, message in ((b'{"parameters": {"file:1/model.onnx": "@@@"}}', "not base64"),
                                      (b'{"parameters": {"priority": 1}}', "unknown parameter 'priority'"),
                                      (b'[1]', "must be a JSON object")):
                    status, _, answer = server.request("POST", "/v2/repository/models/uploaded/load", body)
                    self.assertEqual(status, 400)
                    self.assertIn(message, json.loads(answer)["error"])
                self.assertEqual(os.listdir(scratch), [])
                self.assertTrue(client.is_model_ready("uploaded"))
                client.unload_model("uploaded", unload_dependents=True)
                self.assertFalse(client.is_model_ready("uploaded"))
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            shutil.rmtree(folder)

    def test_a_triton_repository_serves_with_its_config_pbtxt(self):
        folder = tempfile.mkdtemp()
        try:
            repository = make_repository(os.path.join(folder, "repo"), {
                "tiny": (TINY_CNN, None), "stateful": (TINY_CNN, None), "typo": (TINY_CNN, None)})
            configs = {
                # As Triton's docs write them: lists of messages without a colon, enums, comments.
                "tiny": """name: "tiny"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "input" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 32, 32 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 10 ] label_filename: "labels.txt" } ]
# batching as Triton does it
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 200000
  default_queue_policy { max_queue_size: 64 timeout_action: REJECT }
}
instance_group [ { count: 2 kind: KIND_CPU } ]
version_policy: { latest: { num_versions: 1 } }
""",
                "stateful": """max_batch_size: 1
sequence_batching { control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START } ] } ] }
""",
                "typo": "max_batch_size: 8\ndynamic_batching {\n  max_queue_delay_microseconds: -5\n}\n",
            }
            for name, text in configs.items():
                with open(os.path.join(repository, name, "config.pbtxt"), "w") as f:
                    f.write(text)
            with open(os.path.join(repository, "tiny", "labels.txt"), "w") as f:
                f.write("".join(f"label{i}\n" for i in range(10)))
            server = Server("--model-repository", repository)
            try:
                client = server.client(concurrency=4)
                config = client.get_model_config("tiny")
                self.assertEqual((config["max_batch_size"], config["instances"]), (8, 2))
                self.assertEqual(config["dynamic_batching"], {"max_queue_delay_microseconds": 200000,
                                                              "preferred_batch_size": [4, 8],
                                                              "max_queue_size": 64})
                pending = [client.async_infer("tiny", [cnn_input(image(40 + i))], outputs=[
                    httpclient.InferRequestedOutput("logits", class_count=1)]) for i in range(4)]
                for p in pending:
                    value, index, label = p.get_result().as_numpy("logits")[0][0].decode().split(":")
                    self.assertEqual(label, f"label{index}")
                stats = client.get_inference_statistics("tiny")["model_stats"][0]
                self.assertLess(stats["execution_count"], stats["inference_count"])  # merged
                index = {m["name"]: m for m in client.get_model_repository_index()}
                self.assertIn("sequence_batching (a stateful model) is not served here",
                              index["stateful"]["reason"])
                self.assertIn("config.pbtxt: not a Triton model configuration (line 3, column 33",
                              index["typo"]["reason"])
                client.close()
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            shutil.rmtree(folder)

    def test_broken_model_in_repository_makes_the_server_not_ready(self):
        folder = tempfile.mkdtemp()
        try:
            repository = make_repository(os.path.join(folder, "repo"), {
                "good": (TINY_CNN, None),
                # Config mistakes are load errors naming the file and field, not ignored.
                "typo": (TINY_CNN, {"max_batch_sise": 8}),
                "labels_of_nothing": (TINY_CNN, {"labels": {"probs": "labels.txt"}}),
                "labels_missing": (TINY_CNN, {"labels": {"logits": "labels.txt"}}),
            })
            with open(os.path.join(repository, "labels_of_nothing", "labels.txt"), "w") as f:
                f.write("a\nb\n")
            os.makedirs(os.path.join(repository, "broken", "1"))
            with open(os.path.join(repository, "broken", "1", "model.onnx"), "wb") as f:
                f.write(b"not a model")
            server = Server("--model-repository", repository)
            try:
                client = server.client()
                self.assertFalse(client.is_server_ready())
                self.assertTrue(client.is_model_ready("good"))
                index = {m["name"]: m for m in client.get_model_repository_index()}
                self.assertEqual(index["broken"]["state"], "UNAVAILABLE")
                self.assertIn("model.onnx", index["broken"]["reason"])
                reasons = {name: index[name]["reason"]
                           for name in ("typo", "labels_of_nothing", "labels_missing")}
                self.assertIn("config.json: unknown field 'max_batch_sise'", reasons["typo"])
                self.assertIn("labels for output 'probs', which", reasons["labels_of_nothing"])
                self.assertIn("labels.txt: cannot read the label file", reasons["labels_missing"])
                for name in reasons:
                    self.assertEqual(index[name]["state"], "UNAVAILABLE", name)
                # Triton's {"ready": true}: the models ready for inference only.
                status, _, body = server.request("POST", "/v2/repository/index", b'{"ready": true}')
                self.assertEqual((status, [m["name"] for m in json.loads(body)]), (200, ["good"]))
                status, _, body = server.request("POST", "/v2/repository/index", b'{"ready": 1}')
                self.assertEqual(status, 400)
                self.assertIn("'ready' must be a bool", json.loads(body)["error"])
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            shutil.rmtree(folder)

    def test_hostile_models_fail_their_load_and_the_others_are_served(self):
        # tests/data/hostile models (make_hostile_models.py) whose loading must fail with one
        # line naming the part at fault; a Scan with num_scan_inputs past its inputs crashed
        # libonnx's inference, and with it the whole server.
        hostile = {"scan_num_scan_inputs_past_inputs": "[Scan] node 'scan'",
                   "if_branch_arity": "[If] node 'if'",
                   "loop_carried_type_changes": "[Loop] node 'loop'",
                   "sparse_index_2p40": "sparse tensor 'w'",
                   "input_default_of_another_shape": "input 'x'",
                   "two_producers": "value 'y'",
                   "truncated_half": "not a valid ONNX file"}
        folder = tempfile.mkdtemp()
        try:
            models = {"good": (TINY_CNN, None)}
            for name in hostile:
                models[name] = (os.path.join(ROOT, "tests", "data", "hostile", name + ".onnx"), None)
            server = Server("--model-repository", make_repository(os.path.join(folder, "repo"),
                                                                  models))
            try:
                client = server.client()
                index = {m["name"]: m for m in client.get_model_repository_index()}
                for name, fragment in hostile.items():
                    self.assertEqual(index[name]["state"], "UNAVAILABLE", name)
                    self.assertIn(fragment, index[name]["reason"])
                    self.assertNotIn("\n", index[name]["reason"])
                self.assertTrue(client.is_model_ready("good"))
                logits = client.infer("good", [cnn_input(image(3))]).as_numpy("logits")
                self.assertEqual(logits.shape, (1, 10))
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            shutil.rmtree(folder)


def redis_server(port):
    return subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--loglevel", "warning"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


INVERSE_OP_LIB = None
INVERSE_MODEL = os.path.join(ROOT, "examples", "custom_op", "inverse_model.onnx")


class CustomOpTest(unittest.TestCase):
    """A model with com.microsoft::Inverse, served with examples/custom_op's library."""

    def test_custom_op_library_serves_its_op(self):
        if not INVERSE_OP_LIB:
            self.skipTest("--inverse-op-lib not given")
        server = Server(INVERSE_MODEL, "--custom-op-lib", INVERSE_OP_LIB)
        try:
            x = np.array([[[2, 1, 0], [1, 3, 1], [0, 1, 4]]] * 2, dtype=np.float32)
            tensor = httpclient.InferInput("x", list(x.shape), "FP32")
            tensor.set_data_from_numpy(x)
            y = server.client().infer("inverse_model", [tensor]).as_numpy("y")
            # The model is inverse(x) @ inverse(w) * scale: compare with `onnxkit run` (which
            # custom_op_vs_onnxruntime checks against ONNX Runtime).
            with tempfile.TemporaryDirectory() as folder:
                np.save(os.path.join(folder, "x.npy"), x)
                subprocess.run([ONNXKIT, "run", INVERSE_MODEL, "--input",
                                "x=" + os.path.join(folder, "x.npy"), "--custom-op-lib",
                                INVERSE_OP_LIB, "--output-dir", folder],
                               check=True, capture_output=True, timeout=60)
                expected = np.load(os.path.join(folder, "y.npy"))
            np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_without_the_library_the_model_does_not_load(self):
        failed = subprocess.run([ONNXKIT, "serve", INVERSE_MODEL, "--port", "0"],
                                capture_output=True, text=True, timeout=60)
        self.assertNotEqual(failed.returncode, 0)
        self.assertIn("Inverse", failed.stderr)


class CacheTest(unittest.TestCase):
    def cached_twice(self, server):
        client = server.client()
        data = image(42)
        first = client.infer("tiny_cnn", [cnn_input(data)]).as_numpy("logits")
        second = client.infer("tiny_cnn", [cnn_input(data, binary=False)],
                              outputs=[httpclient.InferRequestedOutput("logits", binary_data=False)])
        np.testing.assert_array_equal(first, second.as_numpy("logits"))
        stats = client.get_inference_statistics("tiny_cnn")["model_stats"][0]["inference_stats"]
        return stats

    def test_local_cache(self):
        server = Server(TINY_CNN, "--cache", "local:1MiB")
        try:
            stats = self.cached_twice(server)
            self.assertEqual(stats["cache_hit"]["count"], 1)
            self.assertEqual(stats["cache_miss"]["count"], 1)
        finally:
            self.assertEqual(server.stop(), 0)

    def test_redis_cache_and_redis_going_away(self):
        port = free_port()
        redis = redis_server(port)
        try:
            deadline = time.monotonic() + 10
            while True:  # until redis-server listens
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            server = Server(TINY_CNN, "--cache", f"redis://127.0.0.1:{port}?ttl=60")
            try:
                stats = self.cached_twice(server)
                self.assertEqual(stats["cache_hit"]["count"], 1)
                # A second server (another replica) finds the first one's entry.
                other = Server(TINY_CNN, "--cache", f"redis://127.0.0.1:{port}?ttl=60")
                try:
                    stats = self.cached_twice(other)
                    self.assertEqual(stats["cache_hit"]["count"], 2)
                finally:
                    self.assertEqual(other.stop(), 0)
                redis.terminate()
                redis.wait()
                client = server.client()
                for i in range(5):  # Redis is gone: requests still succeed, without the cache
                    self.assertEqual(client.infer("tiny_cnn", [cnn_input(image(i))])
                                     .as_numpy("logits").shape, (1, 10))
                _, _, body = server.request("GET", "/metrics")
                errors = [line for line in body.decode().splitlines()
                          if line.startswith("onnxkit_cache_errors")]
                self.assertGreater(float(errors[0].split()[1]), 0)
            finally:
                self.assertEqual(server.stop(), 0)
        finally:
            if redis.poll() is None:
                redis.terminate()
                redis.wait()



class PerfAnalyzerTest(ClassServerTest):
    """Triton's perf_analyzer (scripts/install_perf_analyzer.sh), the load generator Triton users
    point at a server: binary requests at several concurrencies and batch sizes, sync and async,
    every one answered, and the figures it reads from the statistics extension consistent."""

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(PERF_ANALYZER):
            raise FileNotFoundError(f"no {PERF_ANALYZER}: run scripts/install_perf_analyzer.sh")
        cls.folder = tempfile.mkdtemp(prefix="onnxkit_perf_analyzer_test_")
        repository = make_repository(os.path.join(cls.folder, "repo"), {
            "tiny_cnn": (TINY_CNN, {"max_batch_size": 8,
                                    "dynamic_batching": {"max_queue_delay_microseconds": 2000}}),
            "bert_tiny": (BERT_TINY, {"max_batch_size": 4}),
        })
        cls.server = Server("--model-repository", repository, "--allow-shared-memory")
        cls.client = cls.server.client()

    def perf_analyzer(self, model, *args):
        """Runs it (windows of 30 requests, any spread counted stable: the figures are not
        what is tested); returns its CSV rows and its output."""
        csv = os.path.join(self.folder, model + ".csv")
        completed = subprocess.run(
            [PERF_ANALYZER, "-m", model, "-u", self.server.url, "-i", "http",
             "--measurement-mode", "count_windows", "--measurement-request-count", "30",
             "--stability-percentage", "100", "--max-trials", "3", "-f", csv, *args],
            capture_output=True, text=True, env=self.environment(), timeout=240)
        output = completed.stdout + completed.stderr
        self.assertEqual(completed.returncode, 0, output)
        with open(csv) as f:
            header, *rows = [line.split(",") for line in f.read().splitlines()]
        return [dict(zip(header, row)) for row in rows], output

    @staticmethod
    def environment():
        """perf_analyzer's libraries (the CUDA runtime) lie beside its bin folder."""
        lib = os.path.join(os.path.dirname(os.path.dirname(PERF_ANALYZER)), "lib")
        return dict(os.environ, LD_LIBRARY_PATH=lib)

    def stats(self, model):
        return self.client.get_inference_statistics(model)["model_stats"][0]

    def test_batched_requests_sync_and_async(self):
        before = self.stats("tiny_cnn")
        rows, output = self.perf_analyzer("tiny_cnn", "-b", "2", "--concurrency-range", "1:4:3")
        self.assertEqual([r["Concurrency"] for r in rows], ["1", "4"], output)
        self.assertTrue(all(float(r["Inferences/Second"]) > 0 for r in rows), output)
        rows, output = self.perf_analyzer("tiny_cnn", "--async", "--concurrency-range", "6")
        self.assertEqual(len(rows), 1, output)
        after = self.stats("tiny_cnn")
        requests = after["inference_stats"]["success"]["count"] - before["inference_stats"]["success"]["count"]
        inferences = after["inference_count"] - before["inference_count"]
        self.assertGreater(requests, 0)
        self.assertEqual(after["inference_stats"]["fail"]["count"], 0)
        # Rows: 2 per request of the first runs, 1 of the async one.
        self.assertGreater(inferences, requests)
        self.assertLess(inferences, 2 * requests)
        self.assertLess(after["execution_count"] - before["execution_count"], requests)  # batched

    def test_int64_inputs_of_a_shape_it_is_given(self):
        rows, output = self.perf_analyzer("bert_tiny", "-b", "3", "--shape", "input_ids:12",
                                          "--shape", "attention_mask:12", "--input-data", "zero")
        self.assertEqual(len(rows), 1, output)
        stats = self.stats("bert_tiny")
        self.assertEqual(stats["inference_stats"]["fail"]["count"], 0)
        self.assertEqual(stats["inference_count"], 3 * stats["inference_stats"]["success"]["count"])

    def test_tensors_in_system_shared_memory(self):
        before = self.stats("tiny_cnn")
        rows, output = self.perf_analyzer("tiny_cnn", "--shared-memory", "system",
                                          "--output-shared-memory-size", "4096", "-b", "2")
        self.assertEqual(len(rows), 1, output)
        after = self.stats("tiny_cnn")
        self.assertEqual(after["inference_stats"]["fail"]["count"], 0)
        self.assertGreater(after["inference_count"], before["inference_count"])
        # It unregisters its regions when it ends.
        self.assertEqual(self.client.get_system_shared_memory_status(), [])

    def test_errors_reach_it_with_the_servers_message(self):
        completed = subprocess.run([PERF_ANALYZER, "-m", "nope", "-u", self.server.url, "-i", "http"],
                                   capture_output=True, text=True, env=self.environment(), timeout=60)
        self.assertNotEqual(completed.returncode, 0)
        self.assertIn("unknown model 'nope'", completed.stdout + completed.stderr)


class SharedMemoryClientTest(ClassServerTest):
    """Triton's system shared-memory extension through tritonclient's own helpers
    (tritonclient.utils.shared_memory): inputs read from and outputs written to regions the
    client registers, when the server allows it."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="onnxkit_shm_test_")
        cls.server = Server(TINY_CNN, "--allow-shared-memory", "--max-batch-size", "4")
        cls.client = cls.server.client()

    def test_inputs_and_outputs_in_shared_memory(self):
        data = image(31, rows=3)
        expected = reference_logits(data, self.folder)
        key = f"/onnxkit_e2e_{os.getpid()}"
        region = shm.create_shared_memory_region("io", key, 64 * 1024)
        try:
            shm.set_shared_memory_region(region, [data], offset=4096)
            self.client.register_system_shared_memory("io", key, 64 * 1024)
            self.assertIn("system_shared_memory", self.client.get_server_metadata()["extensions"])
            self.assertEqual(self.client.get_system_shared_memory_status(),
                             [{"name": "io", "key": key, "offset": 0, "byte_size": 64 * 1024}])
            tensor = httpclient.InferInput("input", list(data.shape), "FP32")
            tensor.set_shared_memory("io", data.nbytes, offset=4096)
            output = httpclient.InferRequestedOutput("logits")
            output.set_shared_memory("io", 1024, offset=40960)
            result = self.client.infer("tiny_cnn", [tensor], outputs=[output])
            answer = result.get_output("logits")
            self.assertEqual(answer["shape"], [3, 10])
            self.assertNotIn("data", answer)
            logits = shm.get_contents_as_numpy(region, np.float32, answer["shape"], offset=40960)
            np.testing.assert_allclose(logits, expected, rtol=1e-4, atol=1e-5)

            # Misuse: 400s naming the field; the region stays usable.
            with self.assertRaises(InferenceServerException) as raised:
                self.client.register_system_shared_memory("io", key, 64)
            self.assertIn("registered already", str(raised.exception))
            with self.assertRaises(InferenceServerException) as raised:
                self.client.register_system_shared_memory("big", key, 1 << 20)
            self.assertIn("run past the end", str(raised.exception))
            small = httpclient.InferRequestedOutput("logits")
            small.set_shared_memory("io", 16, offset=40960)
            with self.assertRaises(InferenceServerException) as raised:
                self.client.infer("tiny_cnn", [tensor], outputs=[small])
            self.assertIn("output 'logits' is 120 bytes, more than its shared_memory_byte_size 16",
                          str(raised.exception))
            self.client.unregister_system_shared_memory("io")
            with self.assertRaises(InferenceServerException) as raised:
                self.client.infer("tiny_cnn", [tensor])
            self.assertIn("input 'input': no shared memory region 'io'", str(raised.exception))
        finally:
            self.client.unregister_system_shared_memory()
            shm.destroy_shared_memory_region(region)

    def test_servers_without_the_flag_refuse_it(self):
        server = Server(TINY_CNN)
        try:
            client = server.client()
            self.assertNotIn("system_shared_memory", client.get_server_metadata()["extensions"])
            with self.assertRaises(InferenceServerException) as raised:
                client.register_system_shared_memory("io", "/onnxkit_unused", 64)
            self.assertIn("--allow-shared-memory", str(raised.exception))
            tensor = httpclient.InferInput("input", [1, 3, 32, 32], "FP32")
            tensor.set_shared_memory("io", 12288)
            with self.assertRaises(InferenceServerException) as raised:
                client.infer("tiny_cnn", [tensor])
            self.assertIn("input 'input': shared memory is not enabled", str(raised.exception))
            # No CUDA regions exist: their status is empty, registering one is refused.
            self.assertEqual(client.get_cuda_shared_memory_status(), [])
            client.close()
        finally:
            self.assertEqual(server.stop(), 0)


class KServeClientTest(unittest.TestCase):
    """The KServe Python SDK's v2 REST client (kserve.InferenceRESTClient, httpx underneath,
    which asks for gzip answers) against a real server: health, model readiness, and infer
    with JSON and with binary tensors, each checked against tritonclient's answer."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(TINY_CNN, "--max-batch-size", "4", "--max-queue-delay-us", "1000")
        cls.base_url = f"http://{cls.server.url}"

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0

    def run_client(self, work):
        async def main():
            client = kserve.InferenceRESTClient(kserve.RESTConfig(protocol="v2", timeout=60))
            try:
                return await work(client)
            finally:
                await client.close()
        return asyncio.run(main())

    def test_health_and_model_readiness(self):
        async def work(client):
            return (await client.is_server_live(self.base_url),
                    await client.is_server_ready(self.base_url),
                    await client.is_model_ready(self.base_url, "tiny_cnn"),
                    await client.is_model_ready(self.base_url, "no_such_model"))
        self.assertEqual(self.run_client(work), (True, True, True, False))

    def infer(self, data, binary_input, binary_output):
        tensor = kserve.InferInput("input", list(data.shape), "FP32")
        tensor.set_data_from_numpy(data, binary_data=binary_input)
        outputs = [RequestedOutput("logits", parameters={"binary_data": binary_output})]
        request = kserve.InferRequest("tiny_cnn", [tensor], request_id="kserve-1",
                                      request_outputs=outputs)
        headers = {}

        async def work(client):
            return await client.infer(self.base_url, request, model_name="tiny_cnn",
                                      response_headers=headers)
        response = self.run_client(work)
        self.assertEqual(response.id, "kserve-1")
        self.assertEqual(response.model_name, "tiny_cnn")
        [output] = response.outputs
        self.assertEqual(output.name, "logits")
        return output.as_numpy(), headers

    def test_infer_json_and_binary(self):
        data = image(11, rows=2)
        triton = self.server.client()
        try:
            expected = triton.infer("tiny_cnn", [cnn_input(data)]).as_numpy("logits")
        finally:
            triton.close()
        for binary_input in (False, True):
            for binary_output in (False, True):
                with self.subTest(binary_input=binary_input, binary_output=binary_output):
                    logits, headers = self.infer(data, binary_input, binary_output)
                    self.assertEqual(logits.shape, (2, 10))
                    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-6)
                    self.assertEqual("inference-header-content-length" in
                                     {k.lower() for k in headers}, binary_output)

    def test_errors_reach_the_client_with_the_servers_message(self):
        tensor = kserve.InferInput("input", [1, 3, 32, 31], "FP32")
        tensor.set_data_from_numpy(np.zeros((1, 3, 32, 31), np.float32), binary_data=False)

        async def work(client):
            await client.infer(self.base_url, kserve.InferRequest("tiny_cnn", [tensor]),
                               model_name="tiny_cnn")
        with self.assertRaises(httpx.HTTPStatusError) as raised:
            self.run_client(work)
        self.assertEqual(raised.exception.response.status_code, 400)
        self.assertIn("shape [1,3,32,31]", str(raised.exception))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--onnxkit", default=ONNXKIT)
    parser.add_argument("--inverse-op-lib", help="examples/custom_op's library, built")
    parser.add_argument("--perf-analyzer", default=PERF_ANALYZER)
    args, rest = parser.parse_known_args()
    ONNXKIT = os.path.abspath(args.onnxkit)
    PERF_ANALYZER = os.path.abspath(args.perf_analyzer)
    INVERSE_OP_LIB = args.inverse_op_lib
    unittest.main(argv=[sys.argv[0], *rest])
