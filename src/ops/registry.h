// The one op registry: (domain, op type, since-version) -> kernel factory.
//
// An op whose semantics changed across opsets registers once per version that changed
// it; a model's opset resolves to the newest registration not newer than it (as ONNX
// Runtime does). Families register themselves from register_all.cc, the one list.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/kernel.h"

namespace onnxkit {

using KernelFactory = std::function<std::unique_ptr<OpKernel>(const KernelCreateContext&)>;

// A factory for a kernel class constructed from the create context.
template <typename K>
KernelFactory kernel_factory() {
  return [](const KernelCreateContext& context) -> std::unique_ptr<OpKernel> {
    return std::make_unique<K>(context);
  };
}

struct OpRegistration {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int64_t since_version = 1;
  KernelFactory factory;
};

class OpRegistry {
 public:
  // Registers `op_type` of `domain` ("" = ai.onnx) from `since_version` on.
  void add(std::string domain, std::string op_type, int64_t since_version, KernelFactory factory);
  // The standard domain, several since-versions sharing one factory.
  void add(std::string op_type, std::initializer_list<int64_t> since_versions,
           const KernelFactory& factory);

  // The registration for a model importing `opset` of `domain`, or nullptr.
  const OpRegistration* find(std::string_view domain, std::string_view op_type,
                             int64_t opset) const;
  bool knows(std::string_view domain, std::string_view op_type) const;
  std::vector<std::string> op_types(std::string_view domain = "") const;

  // The registry with every built-in op family.
  static const OpRegistry& builtin();

 private:
  // (domain, op type) -> registrations sorted by since_version.
  std::map<std::pair<std::string, std::string>, std::vector<OpRegistration>, std::less<>> ops_;
};

// One function per op family (src/ops/<family>.cc); called from register_all.cc.
void register_all_ops(OpRegistry& registry);

}  // namespace onnxkit
