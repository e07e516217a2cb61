#include "ops/registry.h"

#include <algorithm>

namespace onnxkit {

void OpRegistry::insert(Table& table, OpRegistration registration) {
  registration.domain = std::string(canonical_domain(registration.domain));
  auto& versions = table[{registration.domain, registration.op_type}];
  for (const auto& existing : versions) {
    if (existing.since_version == registration.since_version) {
      throw Error("op " + registration.op_type + " since version " +
                  std::to_string(registration.since_version) + " is registered twice");
    }
  }
  versions.push_back(std::move(registration));
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a.since_version < b.since_version; });
}

const OpRegistration* OpRegistry::lookup(const Table& table, std::string_view domain,
                                         std::string_view op_type, int64_t opset) {
  auto it = table.find(std::make_pair(std::string(canonical_domain(domain)), std::string(op_type)));
  if (it == table.end()) return nullptr;
  const OpRegistration* best = nullptr;
  for (const auto& registration : it->second) {
    if (registration.since_version <= opset) best = &registration;
  }
  return best;
}

void OpRegistry::add(std::string domain, std::string op_type, int64_t since_version,
                     KernelFactory factory) {
  insert(ops_, {std::move(domain), std::move(op_type), since_version, std::move(factory)});
}

void OpRegistry::add(std::string op_type, std::initializer_list<int64_t> since_versions,
                     const KernelFactory& factory) {
  for (int64_t version : since_versions) add("", op_type, version, factory);
}

void OpRegistry::add_optimized(std::string domain, std::string op_type, int64_t since_version,
                               KernelFactory factory) {
  insert(optimized_, {std::move(domain), std::move(op_type), since_version, std::move(factory)});
}

const OpRegistration* OpRegistry::find(std::string_view domain, std::string_view op_type,
                                       int64_t opset) const {
  return lookup(ops_, domain, op_type, opset);
}

const OpRegistration* OpRegistry::find_optimized(std::string_view domain, std::string_view op_type,
                                                 int64_t opset) const {
  const OpRegistration* optimized = lookup(optimized_, domain, op_type, opset);
  if (!optimized) return nullptr;
  const OpRegistration* reference = find(domain, op_type, opset);
  if (reference && reference->since_version > optimized->since_version) return nullptr;
  return optimized;
}

bool OpRegistry::knows(std::string_view domain, std::string_view op_type) const {
  const auto key = std::make_pair(std::string(canonical_domain(domain)), std::string(op_type));
  return ops_.count(key) > 0;
}

std::vector<std::string> OpRegistry::op_types(std::string_view domain) const {
  std::vector<std::string> names;
  for (const auto& [key, versions] : ops_) {
    if (key.first == canonical_domain(domain)) names.push_back(key.second);
  }
  return names;
}

std::unique_ptr<OpKernel> OpRegistry::create_kernel(const KernelCreateContext& context,
                                                    KernelTier tier) const {
  const Node& node = context.node();
  if (tier == KernelTier::kOptimized) {
    if (const OpRegistration* optimized =
            find_optimized(node.domain(), node.op_type(), context.opset())) {
      if (auto kernel = optimized->factory(context)) return kernel;
    }
  }
  const OpRegistration* registration = find(node.domain(), node.op_type(), context.opset());
  if (!registration) {
    const std::string domain = domain_label(node.domain());
    if (knows(node.domain(), node.op_type())) {
      fail("{}: no kernel for {} opset {}", node.describe(), domain, context.opset());
    }
    fail("{}: operator {}::{} is not implemented", node.describe(), domain, node.op_type());
  }
  return registration->factory(context);
}

const OpRegistry& OpRegistry::builtin() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace onnxkit
