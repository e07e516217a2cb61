#include "kernels/dnnl_common.h"

namespace onnxkit::dnnl_util {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream make_stream() {
  return dnnl::stream(cpu_engine());
}

dnnl::memory::desc plain_f32_desc(const Shape& shape) {
  dnnl::memory::dims dims = to_dims(shape);
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * std::max<dnnl::memory::dim>(dims[i + 1], 1);
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  // oneDNN takes a non-const handle; kernels only pass read-only memory as primitive inputs.
  return dnnl::memory(desc, cpu_engine(), const_cast<void*>(data));
}

}  // namespace onnxkit::dnnl_util
