#include "ops/registry.h"

#include <algorithm>

namespace onnxkit {
namespace {

std::string canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}

}  // namespace

void OpRegistry::add(std::string domain, std::string op_type, int64_t since_version,
                     KernelFactory factory) {
  domain = canonical_domain(domain);
  auto& versions = ops_[{domain, op_type}];
  for (const auto& existing : versions) {
    if (existing.since_version == since_version) {
      throw Error("op " + op_type + " since version " + std::to_string(since_version) +
                  " is registered twice");
    }
  }
  versions.push_back({std::move(domain), std::move(op_type), since_version, std::move(factory)});
  std::sort(versions.begin(), versions.end(),
            [](const auto& a, const auto& b) { return a.since_version < b.since_version; });
}

void OpRegistry::add(std::string op_type, std::initializer_list<int64_t> since_versions,
                     const KernelFactory& factory) {
  for (int64_t version : since_versions) add("", op_type, version, factory);
}

const OpRegistration* OpRegistry::find(std::string_view domain, std::string_view op_type,
                                       int64_t opset) const {
  auto it = ops_.find(std::make_pair(canonical_domain(domain), std::string(op_type)));
  if (it == ops_.end()) return nullptr;
  const OpRegistration* best = nullptr;
  for (const auto& registration : it->second) {
    if (registration.since_version <= opset) best = &registration;
  }
  return best;
}

bool OpRegistry::knows(std::string_view domain, std::string_view op_type) const {
  return ops_.count(std::make_pair(canonical_domain(domain), std::string(op_type))) > 0;
}

std::vector<std::string> OpRegistry::op_types(std::string_view domain) const {
  std::vector<std::string> names;
  for (const auto& [key, versions] : ops_) {
    if (key.first == canonical_domain(domain)) names.push_back(key.second);
  }
  return names;
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
