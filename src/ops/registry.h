// The op registry: (domain, op type, since-version) -> the op's definition (its reference
// kernel and its traits), plus optimized kernels registered beside the definitions.
//
// An op whose semantics changed across opsets registers once per version that changed
// it; a model's opset resolves to the newest registration not newer than it (as ONNX
// Runtime does). Op families register their definitions with register_<family>_ops
// (src/ops/<family>.cc); the optimized kernels of src/kernels register with
// register_<name>_kernels; the one list that calls them all is registry/builtin_registry.cc.
//
// Two tiers: every op has a reference kernel (src/ops); an optimized kernel (src/kernels)
// may be registered beside it and is preferred when a session asks for optimized kernels.
// An optimized registration serves an opset only if it is at least as new as the
// reference registration that opset resolves to (so it never serves semantics it was not
// written for), and its factory may return nullptr to decline a node (an attribute or
// type it does not handle), which then gets the reference kernel. An optimized kernel
// that hands cases back takes the reference kernel from KernelCreateContext::reference_kernel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxkit/optimization.h"
#include "ops/kernel.h"
#include "ops/op_definition.h"

namespace onnxkit {

// One version of an op: what it is from `since_version` on.
struct OpRegistration {
  std::string domain;  // "" for ai.onnx
  std::string op_type;
  int64_t since_version = 1;
  OpDefinition definition;
};

// An optimized kernel for an op from `since_version` on.
struct OptimizedRegistration {
  int64_t since_version = 1;
  KernelFactory factory;
};

class OpRegistry {
 public:
  // Defines `op_type` of `domain` ("" = ai.onnx) from `since_version` on.
  void add(std::string domain, std::string op_type, int64_t since_version, OpDefinition definition);
  // The standard domain, several since-versions sharing one definition.
  void add(std::string op_type, std::initializer_list<int64_t> since_versions,
           const OpDefinition& definition);
  void add(std::string op_type, std::initializer_list<int64_t> since_versions,
           KernelFactory reference_kernel, const OpTraits& traits,
           ShapeVectorRule shape_vector = nullptr) {
    add(std::move(op_type), since_versions,
        OpDefinition(std::move(reference_kernel), traits, shape_vector));
  }
  // Sets `rule` as the type inference of every registered version of `op_type` of `domain`
  // that has none yet (a rule that differs across versions asks TypeInferenceContext::opset).
  // Fails when the op is not registered.
  void set_type_rule(std::string_view domain, std::string_view op_type, TypeInferenceRule rule);
  // Sets `check` as OpDefinition::check_node of every registered version of `op_type`.
  void set_node_check(std::string_view domain, std::string_view op_type,
                      OpDefinition::NodeCheck check);
  // An optimized kernel for `op_type` of `domain` from `since_version` on.
  void add_optimized(std::string domain, std::string op_type, int64_t since_version,
                     KernelFactory factory);

  // The registration for a model importing `opset` of `domain`, or nullptr.
  const OpRegistration* find(std::string_view domain, std::string_view op_type,
                             int64_t opset) const;
  // The optimized registration serving this opset, or nullptr (see the tier rule above).
  const OptimizedRegistration* find_optimized(std::string_view domain, std::string_view op_type,
                                              int64_t opset) const;
  // The definition of `node` at `opset`, or nullptr when the op is not registered.
  const OpDefinition* definition(const Node& node, int64_t opset) const;
  // The traits of `node` at `opset`; the defaults (no claims) for an unknown op.
  const OpTraits& traits(const Node& node, int64_t opset) const;
  bool knows(std::string_view domain, std::string_view op_type) const;
  // Every registration, by (domain, op type) and then since_version (for `onnxkit ops`).
  std::vector<const OpRegistration*> registrations() const;
  // The since-versions of the optimized kernels of `op_type` of `domain`; empty when none.
  std::vector<int64_t> optimized_versions(std::string_view domain, std::string_view op_type) const;

  // The kernel for context.node() at `tier`: the optimized one when registered and
  // willing, else the reference one. Fails naming the node when there is none.
  std::unique_ptr<OpKernel> create_kernel(const KernelCreateContext& context,
                                          KernelTier tier) const;
  // The reference kernel for context.node(), or nullptr when the op has no registration.
  std::unique_ptr<OpKernel> create_reference_kernel(const KernelCreateContext& context) const;

 private:
  using Key = std::pair<std::string, std::string>;  // (domain, op type)
  // Registrations sorted by since_version.
  std::map<Key, std::vector<OpRegistration>, std::less<>> ops_;
  std::map<Key, std::vector<OptimizedRegistration>, std::less<>> optimized_;
};

}  // namespace onnxkit
