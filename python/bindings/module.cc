// onnxkit._onnxkit: the extension module behind the onnxkit Python package. onnxkit::Error
// (and every failed Status / Result) surfaces as onnxkit.OnnxkitError with onnxkit's message.
#include <pybind11/pybind11.h>

#include <onnxkit/onnxkit.h>

namespace onnxkit::python {
namespace py = pybind11;
void bind_session(py::module_& module);
void bind_simplify(py::module_& module);
void bind_quantize(py::module_& module);
}  // namespace onnxkit::python

PYBIND11_MODULE(_onnxkit, module) {
  namespace py = pybind11;
  module.doc() = "onnxkit's C++ library: sessions, simplify and quantize (use the onnxkit package)";
  py::register_exception<onnxkit::Error>(module, "OnnxkitError", PyExc_RuntimeError);
  onnxkit::python::bind_session(module);
  onnxkit::python::bind_simplify(module);
  onnxkit::python::bind_quantize(module);
}
