#include "core/spin_policy.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/enum_names.h"

namespace onnxkit {
namespace {

constexpr const char* kReexecMarker = "ONNXKIT_SPIN_POLICY_APPLIED";

// The names --spin takes.
constexpr EnumName<SpinPolicy> kSpinPolicyNames[] = {
    {SpinPolicy::kDefault, "default"}, {SpinPolicy::kSpin, "on"}, {SpinPolicy::kSleep, "off"}};

std::string lower(std::string_view text) {
  std::string out;
  for (char c : text) out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

}  // namespace

std::optional<SpinPolicy> parse_spin_policy(std::string_view name) {
  return enum_from_name<SpinPolicy>(kSpinPolicyNames, name);
}

std::string_view spin_policy_name(SpinPolicy policy) {
  return enum_name<SpinPolicy>(kSpinPolicyNames, policy, "default");
}

SpinPolicy process_spin_policy() {
  const char* value = std::getenv("OMP_WAIT_POLICY");
  if (!value) return SpinPolicy::kDefault;
  const std::string policy = lower(value);
  if (policy == "active") return SpinPolicy::kSpin;
  if (policy == "passive") return SpinPolicy::kSleep;
  return SpinPolicy::kDefault;
}

void apply_spin_policy_and_reexec(SpinPolicy policy, char** argv) {
  if (process_spin_policy() == policy || std::getenv(kReexecMarker)) return;
  switch (policy) {
    case SpinPolicy::kSpin:
      ::setenv("OMP_WAIT_POLICY", "active", 1);
      break;
    case SpinPolicy::kSleep:
      ::setenv("OMP_WAIT_POLICY", "passive", 1);
      break;
    default:
      ::unsetenv("OMP_WAIT_POLICY");
      break;
  }
  ::setenv(kReexecMarker, "1", 1);
  ::execv("/proc/self/exe", argv);
  // execv failed: carry on with the policy the process has.
}

}  // namespace onnxkit
