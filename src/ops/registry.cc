#include "ops/registry.h"

#include <algorithm>

#include "core/status.h"
#include "ir/domain.h"

namespace onnxkit {
namespace {

// Registrations are keyed by (canonical domain, op type): "ai.onnx" and "" are one domain.
std::pair<std::string, std::string> registry_key(std::string_view domain,
                                                 std::string_view op_type) {
  return {std::string(canonical_domain(domain)), std::string(op_type)};
}

template <typename Registration>
void insert_sorted(std::vector<Registration>& versions, Registration registration,
                   std::string_view op_type) {
  for (const auto& existing : versions) {
    if (existing.since_version == registration.since_version) {
      fail("op {} since version {} is registered twice", op_type, registration.since_version);
    }
  }
  versions.push_back(std::move(registration));
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a.since_version < b.since_version; });
}

// The newest registration not newer than `opset`, or nullptr.
template <typename Table>
const typename Table::mapped_type::value_type* lookup(const Table& table, std::string_view domain,
                                                      std::string_view op_type, int64_t opset) {
  auto it = table.find(registry_key(domain, op_type));
  if (it == table.end()) return nullptr;
  const typename Table::mapped_type::value_type* best = nullptr;
  for (const auto& registration : it->second) {
    if (registration.since_version <= opset) best = &registration;
  }
  return best;
}

}  // namespace

void OpRegistry::add(std::string domain, std::string op_type, int64_t since_version,
                     OpDefinition definition) {
  auto key = registry_key(domain, op_type);
  insert_sorted(ops_[key], OpRegistration{key.first, op_type, since_version, std::move(definition)},
                op_type);
}

void OpRegistry::add(std::string op_type, std::initializer_list<int64_t> since_versions,
                     const OpDefinition& definition) {
  for (int64_t version : since_versions) add("", op_type, version, definition);
}

void OpRegistry::set_type_rule(std::string_view domain, std::string_view op_type,
                               TypeInferenceRule rule) {
  auto it = ops_.find(registry_key(domain, op_type));
  if (it == ops_.end()) fail("set_type_rule: {} is not registered", op_type);
  for (OpRegistration& registration : it->second) {
    if (!registration.definition.infer_types) registration.definition.infer_types = rule;
  }
}

void OpRegistry::set_node_check(std::string_view domain, std::string_view op_type,
                                OpDefinition::NodeCheck check) {
  auto it = ops_.find(registry_key(domain, op_type));
  if (it == ops_.end()) fail("set_node_check: {} is not registered", op_type);
  for (OpRegistration& registration : it->second) registration.definition.check_node = check;
}

void OpRegistry::add_optimized(std::string domain, std::string op_type, int64_t since_version,
                               KernelFactory factory) {
  auto& versions = optimized_[registry_key(domain, op_type)];
  insert_sorted(versions, OptimizedRegistration{since_version, std::move(factory)}, op_type);
}

const OpRegistration* OpRegistry::find(std::string_view domain, std::string_view op_type,
                                       int64_t opset) const {
  return lookup(ops_, domain, op_type, opset);
}

const OptimizedRegistration* OpRegistry::find_optimized(std::string_view domain,
                                                        std::string_view op_type,
                                                        int64_t opset) const {
  const OptimizedRegistration* optimized = lookup(optimized_, domain, op_type, opset);
  if (!optimized) return nullptr;
  const OpRegistration* reference = find(domain, op_type, opset);
  if (reference && reference->since_version > optimized->since_version) return nullptr;
  return optimized;
}

const OpDefinition* OpRegistry::definition(const Node& node, int64_t opset) const {
  const OpRegistration* registration = find(node.domain(), node.op_type(), opset);
  return registration ? &registration->definition : nullptr;
}

const OpTraits& OpRegistry::traits(const Node& node, int64_t opset) const {
  static const OpTraits kUnknown;
  const OpDefinition* found = definition(node, opset);
  return found ? found->traits : kUnknown;
}

bool OpRegistry::knows(std::string_view domain, std::string_view op_type) const {
  return ops_.count(registry_key(domain, op_type)) > 0;
}

std::unique_ptr<OpKernel> OpRegistry::create_kernel(const KernelCreateContext& context,
                                                    KernelTier tier) const {
  const Node& node = context.node();
  if (tier == KernelTier::kOptimized) {
    if (const OptimizedRegistration* optimized =
            find_optimized(node.domain(), node.op_type(), context.opset())) {
      if (auto kernel = optimized->factory(context)) return kernel;
    }
  }
  const OpRegistration* registration = find(node.domain(), node.op_type(), context.opset());
  if (!registration) {
    const std::string domain = domain_label(node.domain());
    if (knows(node.domain(), node.op_type())) {
      // Model::opset_version gives -1 for a domain the model does not import.
      if (context.opset() < 1) {
        fail("{}: {} opset {} is no opset version (missing from opset_import, or below 1)",
             node.describe(), domain, context.opset());
      }
      fail("{}: no kernel for {} opset {}", node.describe(), domain, context.opset());
    }
    fail("{}: operator {}::{} is not implemented", node.describe(), domain, node.op_type());
  }
  return registration->definition.reference(context);
}

std::unique_ptr<OpKernel> OpRegistry::create_reference_kernel(
    const KernelCreateContext& context) const {
  const Node& node = context.node();
  const OpRegistration* registration = find(node.domain(), node.op_type(), context.opset());
  return registration ? registration->definition.reference(context) : nullptr;
}

std::vector<const OpRegistration*> OpRegistry::registrations() const {
  std::vector<const OpRegistration*> result;
  for (const auto& [key, versions] : ops_) {
    for (const OpRegistration& registration : versions) result.push_back(&registration);
  }
  return result;
}

std::vector<int64_t> OpRegistry::optimized_versions(std::string_view domain,
                                                    std::string_view op_type) const {
  std::vector<int64_t> result;
  auto it = optimized_.find(registry_key(domain, op_type));
  if (it == optimized_.end()) return result;
  for (const OptimizedRegistration& registration : it->second) {
    result.push_back(registration.since_version);
  }
  return result;
}

}  // namespace onnxkit
