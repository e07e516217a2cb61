#include "ops/fused_activation.h"

#include <string>
#include <vector>

#include "ops/fused_ops.h"

namespace onnxkit {

ActivationFunction activation_op(const KernelCreateContext& context, ActivationKind kind) {
  const ActivationSpec& spec = activation_spec(kind);
  ActivationFunction f{kind};
  if (spec.params >= 1) f.alpha = context.attr_float(spec.alpha_name, spec.alpha);
  if (spec.params >= 2) f.beta = context.attr_float(spec.beta_name, spec.beta);
  return f;
}

ActivationFunction parse_fused_activation(const KernelCreateContext& context) {
  const std::string name = context.attr_string("activation", "");
  if (name.empty()) return {};
  const ActivationSpec* spec =
      std::ranges::find(kActivations, name) != kActivations.end() ? find_activation(name) : nullptr;
  if (!spec) {
    std::string known;
    for (std::string_view k : kActivations) known += (known.empty() ? "" : ", ") + std::string(k);
    context.fail("activation '{}' is not one of {}", name, known);
  }
  ActivationFunction f = ActivationFunction::with_defaults(spec->kind);
  const std::vector<float> params = context.attr_floats("activation_params");
  if (!params.empty() && params.size() != static_cast<size_t>(spec->params)) {
    context.fail("activation {} takes {} activation_params, got {}", name, spec->params,
                 params.size());
  }
  if (params.size() >= 1) f.alpha = params[0];
  if (params.size() >= 2) f.beta = params[1];
  return f;
}

}  // namespace onnxkit
