// The one op registry: (domain, op type, since-version) -> kernel factory.
//
// An op whose semantics changed across opsets registers once per version that changed
// it; a model's opset resolves to the newest registration not newer than it (as ONNX
// Runtime does). Families register themselves from register_all.cc, the one list.
//
// Two tiers: every op has a reference kernel (src/ops); an optimized kernel (src/kernels)
// may be registered beside it and is preferred when a session asks for optimized kernels.
// An optimized registration serves an opset only if it is at least as new as the
// reference registration that opset resolves to (so it never serves semantics it was not
// written for), and its factory may return nullptr to decline a node (an attribute or
// type it does not handle), which then gets the reference kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxkit/optimization.h"
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
  // An optimized kernel for `op_type` of `domain` from `since_version` on.
  void add_optimized(std::string domain, std::string op_type, int64_t since_version,
                     KernelFactory factory);

  // The registration for a model importing `opset` of `domain`, or nullptr.
  const OpRegistration* find(std::string_view domain, std::string_view op_type,
                             int64_t opset) const;
  // The optimized registration serving this opset, or nullptr (see the tier rule above).
  const OpRegistration* find_optimized(std::string_view domain, std::string_view op_type,
                                       int64_t opset) const;
  bool knows(std::string_view domain, std::string_view op_type) const;

  // The kernel for context.node() at `tier`: the optimized one when registered and
  // willing, else the reference one. Fails naming the node when there is none.
  std::unique_ptr<OpKernel> create_kernel(const KernelCreateContext& context,
                                          KernelTier tier) const;
  std::vector<std::string> op_types(std::string_view domain = "") const;

  // The registry with every built-in op family.
  static const OpRegistry& builtin();

 private:
  // (domain, op type) -> registrations sorted by since_version.
  using Table =
      std::map<std::pair<std::string, std::string>, std::vector<OpRegistration>, std::less<>>;
  static void insert(Table& table, OpRegistration registration);
  static const OpRegistration* lookup(const Table& table, std::string_view domain,
                                      std::string_view op_type, int64_t opset);
  Table ops_;
  Table optimized_;
};

// One function per op family (src/ops/<family>.cc) and per optimized kernel file
// (src/kernels/), all called from register_all.cc.
void register_all_ops(OpRegistry& registry);

}  // namespace onnxkit
