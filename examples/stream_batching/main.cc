// Batching a stream of frames: several "cameras" (threads) each produce frames at their own
// pace and submit them one by one to a DynamicBatcher, which merges the frames that arrive
// within a few milliseconds into one run of the model and hands each camera its own result.
// It includes <onnxkit/batcher.h> and <onnxkit/session.h> only and links onnxkit_lib.
//
//   onnxkit_stream_batching_example MODEL [CAMERAS] [FRAMES_PER_CAMERA]
//
// MODEL must take one float input [batch, ...] (e.g. examples/models/tiny_cnn.onnx). Prints
// each camera's frame count and the batch sizes the model ran at; exits 1 on any error.
#include <onnxkit/batcher.h>
#include <onnxkit/session.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [CAMERAS] [FRAMES_PER_CAMERA]\n", argv[0]);
    return 1;
  }
  const int cameras = argc > 2 ? std::stoi(argv[2]) : 4;
  const int frames_per_camera = argc > 3 ? std::stoi(argv[3]) : 16;
  auto loaded = onnxkit::Session::load(argv[1]);
  if (!loaded.ok()) {
    std::fprintf(stderr, "error: %s\n", loaded.error().c_str());
    return 1;
  }
  std::shared_ptr<const onnxkit::Session> session(std::move(loaded).value());
  const std::vector<onnxkit::ValueInfo> inputs = session->inputs();
  if (inputs.size() != 1 || inputs[0].dtype != onnxkit::DType::kFloat || !inputs[0].shape) {
    std::fprintf(stderr, "error: %s: this example feeds models with one float input\n", argv[1]);
    return 1;
  }
  onnxkit::Shape frame_shape;  // one frame: batch 1, the declared dims (unknown ones 1)
  for (const onnxkit::Dim& dim : *inputs[0].shape) {
    frame_shape.push_back(dim.is_known() ? dim.value : 1);
  }
  frame_shape[0] = 1;

  onnxkit::BatcherOptions options;
  options.max_batch_size = cameras;
  options.max_queue_delay_us = 2000;  // a frame waits at most 2 ms for others
  onnxkit::DynamicBatcher batcher(session, options);

  std::mutex mutex;
  std::map<int64_t, int> runs_by_batch_size;
  std::vector<int> frames_done(cameras, 0);
  int errors = 0;
  std::vector<std::thread> threads;
  for (int camera = 0; camera < cameras; ++camera) {
    threads.emplace_back([&, camera] {
      std::mt19937 rng(camera);
      std::uniform_real_distribution<float> pixel(0.f, 1.f);
      for (int frame = 0; frame < frames_per_camera; ++frame) {
        std::vector<float> data(static_cast<size_t>(onnxkit::shape_numel(frame_shape)));
        for (float& value : data) value = pixel(rng);
        onnxkit::NamedValues feed{{inputs[0].name, onnxkit::Tensor::from_vector(
                                                       onnxkit::DType::kFloat, frame_shape, data)}};
        onnxkit::Status accepted = batcher.submit(
            std::move(feed), [&, camera](onnxkit::Result<onnxkit::NamedValues> outputs,
                                         const onnxkit::BatchTiming& timing) {
              std::lock_guard guard(mutex);
              if (!outputs.ok()) {
                std::fprintf(stderr, "error: camera %d: %s\n", camera, outputs.error().c_str());
                ++errors;
                return;
              }
              ++frames_done[camera];
              if (timing.first_of_batch) ++runs_by_batch_size[timing.batch_size];
            });
        if (!accepted.ok()) {
          std::lock_guard guard(mutex);
          std::fprintf(stderr, "error: camera %d: %s\n", camera, accepted.message().c_str());
          ++errors;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1 + camera % 3));  // its frame rate
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  batcher.stop();  // every accepted frame has its result after this

  for (int camera = 0; camera < cameras; ++camera) {
    std::printf("camera %d: %d frames\n", camera, frames_done[camera]);
    if (frames_done[camera] != frames_per_camera) ++errors;
  }
  for (const auto& [size, runs] : runs_by_batch_size) {
    std::printf("batch size %lld: %d runs\n", static_cast<long long>(size), runs);
  }
  return errors == 0 ? 0 : 1;
}
