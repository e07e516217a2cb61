#include "registry/custom_op_library.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include "core/status.h"
#include "ir/domain.h"
#include "onnxkit/custom_op.h"
#include "ops/type_inference.h"

// The opaque handles of custom_op.h are these structs: what one callback may reach.
struct OnnxkitOpRegistrar {
  onnxkit::OpRegistry* registry;
  std::string library;
  // (domain, op type) the registry knew before the library: the library may not redefine them.
  std::set<std::pair<std::string, std::string>> known_before;
  std::string error;
};

struct OnnxkitKernelContext {
  onnxkit::KernelContext* kernel;
  std::string error;
};

struct OnnxkitShapeContext {
  onnxkit::TypeInferenceContext* types;
  std::vector<std::vector<OnnxkitDim>> input_dims;  // storage behind shape_input's dims
  std::string error;
};

namespace onnxkit {
namespace {

const Node& node_of(const OnnxkitOpNode* node) {
  return *reinterpret_cast<const Node*>(node);
}

const OnnxkitOpNode* as_op_node(const Node& node) {
  return reinterpret_cast<const OnnxkitOpNode*>(&node);
}

// Attribute lookups: 1 found, 0 absent, -1 another type.
const Attribute* find_typed(const OnnxkitOpNode* node, const char* name, AttrType type,
                            int& found) {
  const Attribute* attribute = node && name ? node_of(node).find_attribute(name) : nullptr;
  found = !attribute ? 0 : attribute->type == type ? 1 : -1;
  return found == 1 ? attribute : nullptr;
}

int attr_int(const OnnxkitOpNode* node, const char* name, int64_t* value) {
  int found;
  if (const Attribute* attribute = find_typed(node, name, AttrType::kInt, found)) {
    *value = attribute->i;
  }
  return found;
}

int attr_float(const OnnxkitOpNode* node, const char* name, float* value) {
  int found;
  if (const Attribute* attribute = find_typed(node, name, AttrType::kFloat, found)) {
    *value = attribute->f;
  }
  return found;
}

int attr_string(const OnnxkitOpNode* node, const char* name, const char** value, size_t* size) {
  int found;
  if (const Attribute* attribute = find_typed(node, name, AttrType::kString, found)) {
    *value = attribute->s.data();
    *size = attribute->s.size();
  }
  return found;
}

int attr_ints(const OnnxkitOpNode* node, const char* name, const int64_t** values, size_t* count) {
  int found;
  if (const Attribute* attribute = find_typed(node, name, AttrType::kInts, found)) {
    *values = attribute->ints.data();
    *count = attribute->ints.size();
  }
  return found;
}

bool view_dtype_ok(int32_t dtype) {
  return dtype_is_known(dtype) && static_cast<DType>(dtype) != DType::kString;
}

void fill_view(const Tensor& tensor, void* data, OnnxkitTensorView* view) {
  view->dtype = static_cast<int32_t>(tensor.dtype());
  view->rank = tensor.rank();
  view->shape = tensor.shape().data();
  view->data = data;
}

int kernel_input(const OnnxkitKernelContext* context, size_t index, OnnxkitTensorView* view) {
  *view = OnnxkitTensorView{};
  const KernelContext& kernel = *context->kernel;
  if (!kernel.has_input(index)) return 0;
  const RuntimeValue& value = kernel.input_value(index);
  if (!value.is_tensor() || value.tensor().dtype() == DType::kString) return 0;
  const Tensor& tensor = value.tensor();
  fill_view(tensor, const_cast<void*>(tensor.raw_data()), view);
  return 1;
}

int allocate_output(OnnxkitKernelContext* context, size_t index, int32_t dtype, size_t rank,
                    const int64_t* shape, OnnxkitTensorView* view) {
  try {
    if (index >= context->kernel->num_outputs()) {
      fail("allocate_output: output {} of {}", index, context->kernel->num_outputs());
    }
    if (!view_dtype_ok(dtype)) fail("allocate_output: dtype {} has no tensor view", dtype);
    if (rank > 0 && !shape) fail("allocate_output: rank {} but shape is NULL", rank);
    Shape dims(shape, shape + rank);
    Tensor& tensor = context->kernel->allocate_output(index, static_cast<DType>(dtype), dims);
    fill_view(tensor, tensor.mutable_raw_data(), view);
    return 0;
  } catch (const std::exception& e) {
    context->error = e.what();
    return -1;
  }
}

int shape_input(const OnnxkitShapeContext* context, size_t index, int32_t* dtype, int64_t* rank,
                const OnnxkitDim** dims) {
  *dtype = ONNXKIT_DTYPE_UNDEFINED;
  *rank = -1;
  *dims = nullptr;
  const ValueType* type =
      index < context->types->num_inputs() ? context->types->input_type(index) : nullptr;
  if (!type || !type->is_tensor()) return 0;
  *dtype = static_cast<int32_t>(type->elem_type);
  if (type->shape) {
    auto& storage = const_cast<OnnxkitShapeContext*>(context)->input_dims[index];
    storage.clear();
    for (const Dim& dim : *type->shape) {
      storage.push_back(OnnxkitDim{dim.is_known() ? dim.value : -1,
                                   dim.is_symbolic() ? dim.param.c_str() : nullptr});
    }
    *rank = static_cast<int64_t>(storage.size());
    *dims = storage.data();
  }
  return 1;
}

int shape_input_value(const OnnxkitShapeContext* context, size_t index, OnnxkitTensorView* view) {
  *view = OnnxkitTensorView{};
  const Tensor* tensor =
      index < context->types->num_inputs() ? context->types->input_value(index) : nullptr;
  if (!tensor || tensor->dtype() == DType::kString) return 0;
  fill_view(*tensor, const_cast<void*>(tensor->raw_data()), view);
  return 1;
}

int shape_set_output(OnnxkitShapeContext* context, size_t index, int32_t dtype, int64_t rank,
                     const OnnxkitDim* dims) {
  if (dtype != ONNXKIT_DTYPE_UNDEFINED && !dtype_is_known(dtype)) {
    context->error = fmt::format("shape_set_output: unknown dtype {}", dtype);
    return -1;
  }
  if (index >= context->types->num_outputs()) {
    context->error =
        fmt::format("shape_set_output: output {} of {}", index, context->types->num_outputs());
    return -1;
  }
  if (rank > 0 && !dims) {
    context->error = fmt::format("shape_set_output: rank {} but dims is NULL", rank);
    return -1;
  }
  SymbolicShape shape;
  if (rank >= 0) {
    std::vector<Dim> out;
    for (int64_t i = 0; i < rank; ++i) {
      if (dims[i].value >= 0) {
        out.push_back(Dim::known(dims[i].value));
      } else if (dims[i].symbol) {
        out.push_back(Dim::symbol(dims[i].symbol));
      } else {
        out.push_back(Dim{});
      }
    }
    shape = std::move(out);
  }
  context->types->set_output(index, tensor_type(static_cast<DType>(dtype), std::move(shape)));
  return 0;
}

int register_op(OnnxkitOpRegistrar* registrar, const OnnxkitCustomOp* op);

const OnnxkitCustomOpApi kApi = {
    .abi_version = ONNXKIT_CUSTOM_OP_ABI_VERSION,
    .register_op = register_op,
    .registrar_error = [](OnnxkitOpRegistrar* registrar,
                          const char* message) { registrar->error = message ? message : ""; },
    .kernel_node =
        [](const OnnxkitKernelContext* context) { return as_op_node(context->kernel->node()); },
    .shape_node =
        [](const OnnxkitShapeContext* context) { return as_op_node(context->types->node()); },
    .node_name = [](const OnnxkitOpNode* node) { return node_of(node).name().c_str(); },
    .attr_int = attr_int,
    .attr_float = attr_float,
    .attr_string = attr_string,
    .attr_ints = attr_ints,
    .input_count =
        [](const OnnxkitKernelContext* context) { return context->kernel->num_inputs(); },
    .output_count =
        [](const OnnxkitKernelContext* context) { return context->kernel->num_outputs(); },
    .input = kernel_input,
    .allocate_output = allocate_output,
    .kernel_error = [](OnnxkitKernelContext* context,
                       const char* message) { context->error = message ? message : ""; },
    .shape_input_count =
        [](const OnnxkitShapeContext* context) { return context->types->num_inputs(); },
    .shape_output_count =
        [](const OnnxkitShapeContext* context) { return context->types->num_outputs(); },
    .shape_input = shape_input,
    .shape_input_value = shape_input_value,
    .shape_set_output = shape_set_output,
    .shape_error = [](OnnxkitShapeContext* context,
                      const char* message) { context->error = message ? message : ""; },
};

// One registered op version, shared by its kernels and its type rule.
struct CustomOp {
  std::string library;
  std::string domain;
  std::string op_type;
  int64_t since_version;
  OnnxkitKernelFn compute;
  OnnxkitShapeFn infer_types;
  void* user_data;
  bool deterministic;
};

// The kernel factory of every custom op, a named type so that defined_by_custom_op_library
// can recognise it.
struct CustomOpKernelFactory;

class CustomOpKernel : public OpKernel {
 public:
  explicit CustomOpKernel(std::shared_ptr<const CustomOp> op) : op_(std::move(op)) {}

  void compute(KernelContext& context) const override {
    OnnxkitKernelContext call{&context, {}};
    int status = op_->compute(&kApi, &call, op_->user_data);
    if (status != 0) {
      context.fail("custom op library '{}': {}", op_->library,
                   call.error.empty() ? fmt::format("the kernel failed ({})", status) : call.error);
    }
  }

 private:
  std::shared_ptr<const CustomOp> op_;
};

// TypeInferenceRule is a plain function: it finds the op's callback in a process-wide table by
// the node's (domain, op type) and the opset. A library's dlopen handle is process-wide as
// well; two libraries that give one op version different type callbacks cannot both load.
class CustomTypeRules {
 public:
  static CustomTypeRules& instance() {
    static CustomTypeRules rules;
    return rules;
  }

  // Fails naming the other library when the op version already has another callback.
  void add(std::shared_ptr<const CustomOp> op) {
    std::lock_guard lock(mutex_);
    auto& versions = rules_[{op->domain, op->op_type}];
    auto it = versions.find(op->since_version);
    if (it != versions.end()) {
      const CustomOp& other = *it->second;
      if (other.infer_types == op->infer_types && other.user_data == op->user_data) return;
      fail(
          "registers {} since version {} with a type callback other than the one library "
          "'{}' gave it in this process",
          op->op_type, op->since_version, other.library);
    }
    versions.emplace(op->since_version, std::move(op));
  }

  std::shared_ptr<const CustomOp> find(std::string_view domain, const std::string& op_type,
                                       int64_t opset) const {
    std::lock_guard lock(mutex_);
    auto it = rules_.find({std::string(canonical_domain(domain)), op_type});
    if (it == rules_.end()) return nullptr;
    std::shared_ptr<const CustomOp> best;
    for (const auto& [since, op] : it->second) {
      if (since <= opset) best = op;
    }
    return best;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, std::map<int64_t, std::shared_ptr<const CustomOp>>>
      rules_;
};

void infer_custom_op_types(TypeInferenceContext& context) {
  const Node& node = context.node();
  auto op = CustomTypeRules::instance().find(node.domain(), node.op_type(), context.opset());
  if (!op || !op->infer_types) return;
  OnnxkitShapeContext call{&context, {}, {}};
  call.input_dims.resize(context.num_inputs());
  int status = op->infer_types(&kApi, &call, op->user_data);
  if (status != 0) {
    fail("custom op library '{}': {}", op->library,
         call.error.empty() ? fmt::format("type inference failed ({})", status) : call.error);
  }
}

struct CustomOpKernelFactory {
  std::shared_ptr<const CustomOp> op;
  std::unique_ptr<OpKernel> operator()(const KernelCreateContext&) const {
    return std::make_unique<CustomOpKernel>(op);
  }
};

int register_op(OnnxkitOpRegistrar* registrar, const OnnxkitCustomOp* op) {
  try {
    if (!op || !op->op_type || !*op->op_type) fail("an op without an op type");
    if (!op->compute) fail("op {} has no compute callback", op->op_type);
    if (op->since_version < 1) {
      fail("op {} has since_version {} (must be >= 1)", op->op_type, op->since_version);
    }
    auto custom = std::make_shared<CustomOp>(
        CustomOp{registrar->library, std::string(canonical_domain(op->domain ? op->domain : "")),
                 op->op_type, op->since_version, op->compute, op->infer_types, op->user_data,
                 op->non_deterministic == 0});
    std::string name =
        custom->domain.empty() ? custom->op_type : custom->domain + "::" + custom->op_type;
    if (registrar->known_before.count({custom->domain, custom->op_type})) {
      fail("registers {}, which is already defined (built in or by another library)", name);
    }
    const OpRegistration* same =
        registrar->registry->find(custom->domain, custom->op_type, custom->since_version);
    if (same && same->since_version == custom->since_version) {
      fail("registers {} since version {} twice", name, custom->since_version);
    }
    if (custom->infer_types) CustomTypeRules::instance().add(custom);
    OpDefinition definition(CustomOpKernelFactory{custom},
                            OpTraits{.deterministic = custom->deterministic});
    if (custom->infer_types) definition.infer_types = infer_custom_op_types;
    registrar->registry->add(custom->domain, custom->op_type, custom->since_version,
                             std::move(definition));
    return 0;
  } catch (const std::exception& e) {
    registrar->error = e.what();
    return -1;
  }
}

using RegisterFunction = int (*)(OnnxkitOpRegistrar*, const OnnxkitCustomOpApi*);

}  // namespace

void load_custom_op_library(const std::string& path, OpRegistry& registry) {
  auto fail_library = [&](const std::string& why) -> void {
    throw Error(fmt::format("custom op library '{}': {}", path, why));
  };
  // RTLD_LOCAL: two libraries may use the same names for their own functions.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    fail_library(fmt::format("cannot be loaded: {}", why ? why : "unknown reason"));
  }
  auto function =
      reinterpret_cast<RegisterFunction>(dlsym(handle, ONNXKIT_CUSTOM_OP_REGISTER_FUNCTION));
  if (!function) {
    dlclose(handle);
    fail_library("exports no " ONNXKIT_CUSTOM_OP_REGISTER_FUNCTION
                 " function (see include/onnxkit/custom_op.h)");
  }
  OnnxkitOpRegistrar registrar{&registry, path, {}, {}};
  for (const OpRegistration* registration : registry.registrations()) {
    registrar.known_before.emplace(registration->domain, registration->op_type);
  }
  // The handle is never closed from here on: the registry's kernels call into the library.
  int status = function(&registrar, &kApi);
  if (!registrar.error.empty()) fail_library(registrar.error);
  if (status != 0) fail_library(fmt::format("its registration function failed ({})", status));
}

bool defined_by_custom_op_library(const OpDefinition& definition) {
  return definition.reference.target<CustomOpKernelFactory>() != nullptr;
}

std::shared_ptr<const OpRegistry> registry_with_custom_ops(const OpRegistry& base,
                                                           const std::vector<std::string>& paths) {
  auto registry = std::make_shared<OpRegistry>(base);
  for (const std::string& path : paths) load_custom_op_library(path, *registry);
  return registry;
}

}  // namespace onnxkit
