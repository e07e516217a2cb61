// How idle intra-op threads wait for the next parallel loop: spinning answers the next
// loop sooner but burns CPU between requests; sleeping costs a wake-up per loop.
//
// libgomp (which onnxkit and Debian's oneDNN share) reads its wait policy once, before
// main, from OMP_WAIT_POLICY. So the policy is a property of the process: a program sets
// it in its environment before it starts, and the CLI's --spin re-executes onnxkit with it
// (apply_spin_policy_and_reexec).
#pragma once

#include <optional>
#include <string_view>

namespace onnxkit {

enum class SpinPolicy {
  kDefault,  // libgomp's: spin a while (~300k iterations), then sleep
  kSpin,     // OMP_WAIT_POLICY=active: keep spinning
  kSleep,    // OMP_WAIT_POLICY=passive: sleep at once
};

std::optional<SpinPolicy> parse_spin_policy(std::string_view name);  // default | on | off
std::string_view spin_policy_name(SpinPolicy policy);

// The policy this process started with (from OMP_WAIT_POLICY).
SpinPolicy process_spin_policy();

// If the process did not start with `policy`, sets OMP_WAIT_POLICY accordingly and
// re-executes /proc/self/exe with `argv` (once). Returns only when no re-execution was
// needed or it failed (the run then keeps the policy it has).
void apply_spin_policy_and_reexec(SpinPolicy policy, char** argv);

}  // namespace onnxkit
