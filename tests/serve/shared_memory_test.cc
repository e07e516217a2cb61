// Triton's system shared-memory extension: regions of real POSIX shared memory objects,
// registered, read and written through infer requests, and every misuse a 400 naming it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>

#include "serve/inference_protocol.h"
#include "serve/shared_memory.h"
#include "tensor_info.h"

namespace onnxkit::serve {
namespace {

// A shared memory object of `size` bytes, unlinked with the test.
class SharedMemoryObject {
 public:
  explicit SharedMemoryObject(size_t size)
      : key_("/onnxkit_test_" + std::to_string(getpid()) + "_" + std::to_string(next_++)) {
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(fd, 0) << std::strerror(errno);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
    memory_ = static_cast<char*>(mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    size_ = size;
    close(fd);
  }
  ~SharedMemoryObject() {
    munmap(memory_, size_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  char* memory() { return memory_; }

 private:
  static inline int next_ = 0;
  std::string key_;
  char* memory_ = nullptr;
  size_t size_ = 0;
};

int status_of(const std::function<void()>& call, std::string* message = nullptr) {
  try {
    call();
  } catch (const RequestError& e) {
    if (message) *message = e.what();
    return e.http_status();
  }
  return 200;
}

TEST(SharedMemoryTest, RegionsStartAtTheirOffsetAndAreListed) {
  SharedMemoryObject object(3 * 4096);
  std::memcpy(object.memory() + 5000, "hello", 5);
  SharedMemoryRegions regions;
  regions.register_region("r", object.key(), 4990, 100);  // not page aligned
  const auto view = regions.view("r", 10, 5, "input 'x'");
  std::string bytes(5, '\0');
  view->read(bytes.data(), "input 'x'");
  EXPECT_EQ(bytes, "hello");
  view->write("HELLO", "output 'y'");  // written through to the object
  EXPECT_EQ(std::string(object.memory() + 5000, 5), "HELLO");
  EXPECT_EQ(regions.status(""), nlohmann::json::parse(R"([{"name":"r","key":")" + object.key() +
                                                      R"(","offset":4990,"byte_size":100}])"));

  // A view outlives its region's unregistration (a request in flight keeps its object open).
  regions.unregister("r");
  view->read(bytes.data(), "input 'x'");
  EXPECT_EQ(bytes, "HELLO");
  EXPECT_EQ(regions.status(""), nlohmann::json::array());
}

TEST(SharedMemoryTest, AnObjectTheClientShrinksIsA400NotACrash) {
  SharedMemoryObject object(8192);
  SharedMemoryRegions regions;
  regions.register_region("r", object.key(), 4096, 4096);
  const auto view = regions.view("r", 0, 4096, "input 'x'");
  const int fd = shm_open(object.key().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 100), 0);  // a mapped read of the region would now raise SIGBUS
  close(fd);
  std::string bytes(4096, '\0');
  std::string message;
  EXPECT_EQ(status_of([&] { view->read(bytes.data(), "input 'x'"); }, &message), 400);
  EXPECT_NE(message.find("input 'x': shared memory region 'r' ends early"), std::string::npos)
      << message;
}

TEST(SharedMemoryTest, MisuseIs400NamingIt) {
  SharedMemoryObject object(4096);
  SharedMemoryRegions regions;
  std::string message;
  EXPECT_EQ(status_of([&] { regions.register_region("r", "/../etc/passwd", 0, 8); }, &message),
            400);
  EXPECT_NE(message.find("not a shared memory object name"), std::string::npos) << message;
  EXPECT_EQ(
      status_of([&] { regions.register_region("r", "/onnxkit_no_such_object", 0, 8); }, &message),
      400);
  EXPECT_NE(message.find("cannot open shared memory object"), std::string::npos) << message;
  EXPECT_EQ(status_of([&] { regions.register_region("r", object.key(), 4000, 97); }, &message),
            400);
  EXPECT_NE(message.find("run past the end"), std::string::npos) << message;
  EXPECT_EQ(status_of([&] { regions.register_region("r", object.key(), 0, 0); }), 400);

  regions.register_region("r", object.key(), 0, 64);
  EXPECT_EQ(status_of([&] { regions.register_region("r", object.key(), 0, 64); }, &message), 400);
  EXPECT_NE(message.find("registered already"), std::string::npos) << message;
  EXPECT_EQ(status_of([&] { regions.view("r", 60, 8, "input 'x'"); }, &message), 400);
  EXPECT_NE(message.find("input 'x'"), std::string::npos) << message;
  EXPECT_EQ(status_of([&] { regions.view("q", 0, 8, "input 'x'"); }, &message), 400);
  EXPECT_NE(message.find("no shared memory region 'q'"), std::string::npos) << message;
  EXPECT_EQ(status_of([&] { regions.unregister("q"); }), 400);
  EXPECT_EQ(status_of([&] { regions.status("q"); }), 400);
}

TEST(SharedMemoryTest, InferRequestsReadInputsAndWriteOutputsThere) {
  SharedMemoryObject object(4096);
  SharedMemoryRegions regions;
  regions.register_region("io", object.key(), 0, 4096);
  const float input[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(object.memory() + 128, input, sizeof input);
  const SharedMemoryResolver resolver = [&](const std::string& name, uint64_t offset,
                                            uint64_t byte_size, const std::string& where) {
    return regions.view(name, offset, byte_size, where);
  };
  const std::vector<ValueInfo> inputs{
      tensor_info("x", DType::kFloat, {Dim::symbol("batch"), Dim::known(3)})};
  const std::string body = R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32",
      "parameters":{"shared_memory_region":"io","shared_memory_offset":128,
                    "shared_memory_byte_size":24}}],
      "outputs":[{"name":"x","parameters":{"shared_memory_region":"io",
                  "shared_memory_offset":1024,"shared_memory_byte_size":64}}]})";
  InferRequest request = parse_infer_request(body, std::nullopt, inputs, inputs, {}, resolver);
  ASSERT_EQ(request.inputs.size(), 1u);
  const Tensor& x = request.inputs[0].second.tensor();
  EXPECT_EQ(std::vector<float>(x.data<float>(), x.data<float>() + 6),
            std::vector<float>(input, input + 6));

  // The output goes to offset 1024 of the region, the answer carries no data.
  const auto answer = nlohmann::json::parse(
      encode_infer_response("m", "1", request, request.inputs).body)["outputs"][0];
  EXPECT_EQ(answer, nlohmann::json::parse(R"({"name":"x","datatype":"FP32","shape":[2,3]})"));
  EXPECT_EQ(std::memcmp(object.memory() + 1024, input, sizeof input), 0);

  // An output larger than its part of the region.
  request.outputs[0].shared_memory->view = regions.view("io", 1024, 16, "output 'x'");
  std::string message;
  EXPECT_EQ(status_of([&] { encode_infer_response("m", "1", request, request.inputs); }, &message),
            400);
  EXPECT_NE(message.find("output 'x' is 24 bytes, more than its shared_memory_byte_size 16"),
            std::string::npos)
      << message;

  auto parse = [&](const std::string& parameters, const SharedMemoryResolver& with) {
    return [&, parameters] {
      parse_infer_request(R"({"inputs":[{"name":"x","shape":[2,3],"datatype":"FP32",)"
                          R"("parameters":)" +
                              parameters + "}]}",
                          std::nullopt, inputs, inputs, {}, with);
    };
  };
  const struct {
    std::string parameters;
    const char* mentions;
  } bad[] = {
      {R"({"shared_memory_region":"io"})", "needs both"},
      {R"({"shared_memory_byte_size":24})", "needs both"},
      {R"({"shared_memory_region":"io","shared_memory_byte_size":20})",
       "shared_memory_byte_size 20, shape [2,3] of FP32 needs 24 bytes"},
      {R"({"shared_memory_region":"io","shared_memory_byte_size":-1})", "non-negative"},
      {R"({"shared_memory_region":"io","shared_memory_byte_size":24,"shared_memory_offset":4090})",
       "run past the end of region 'io'"},
      {R"({"shared_memory_region":"nope","shared_memory_byte_size":24})",
       "no shared memory region 'nope'"},
  };
  for (const auto& c : bad) {
    SCOPED_TRACE(c.parameters);
    EXPECT_EQ(status_of(parse(c.parameters, resolver), &message), 400);
    EXPECT_NE(message.find(c.mentions), std::string::npos) << message;
    EXPECT_NE(message.find("input 'x'"), std::string::npos) << message;
  }
  // A server without shared memory says so.
  EXPECT_EQ(status_of(parse(R"({"shared_memory_region":"io","shared_memory_byte_size":24})", {}),
                      &message),
            400);
  EXPECT_NE(message.find("--allow-shared-memory"), std::string::npos) << message;
}

}  // namespace
}  // namespace onnxkit::serve
