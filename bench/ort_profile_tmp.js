const ort = require('onnxruntime-node');
const fs = require('fs');
(async () => {
  const [model, runs] = [process.argv[2], parseInt(process.argv[3] || '20')];
  const s = await ort.InferenceSession.create(model, {intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: '/tmp/ortp/p'});
  const dims = [1, 3, 224, 224];
  const data = new Float32Array(dims.reduce((a, b) => a * b));
  for (let i = 0; i < data.length; ++i) data[i] = Math.sin(i);
  const feeds = {}; feeds[s.inputNames[0]] = new ort.Tensor('float32', data, dims);
  for (let i = 0; i < 3; ++i) await s.run(feeds);
  for (let i = 0; i < runs; ++i) await s.run(feeds);
  const f = s.endProfiling();
})();
