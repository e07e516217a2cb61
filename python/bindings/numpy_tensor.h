// numpy arrays <-> onnxkit tensors at the Python boundary: without a copy where the layout
// allows (a C-contiguous, aligned, native-endian array of an ONNX element type).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <onnxkit/onnxkit.h>

#include <string>
#include <vector>

namespace onnxkit::python {

namespace py = pybind11;

// An input built from a Python object (an array, or anything numpy.asarray takes). The
// tensor may view the array's memory: keep `keep_alive` until the run is over. Errors name
// the input ("input 'x': ...").
struct FedInput {
  RuntimeValue value;
  std::vector<py::object> keep_alive;
};
FedInput tensor_from_python(const std::string& input_name, const py::handle& object,
                            bool expects_sequence);

// A numpy array owning `tensor` (its bytes become the array's memory; copied only when they
// are shared, e.g. a model initializer returned as an output). Strings: an object array of str.
py::object numpy_from_tensor(Tensor tensor);
// A run output: an array, a list of arrays (sequence) or None.
py::object python_from_value(RuntimeValue value);

// The onnxkit element type of a numpy dtype; kUndefined when there is none.
DType dtype_from_numpy(const py::dtype& dtype);
// The numpy dtype of an onnxkit element type (ml_dtypes' for bfloat16 and float8).
py::dtype numpy_dtype(DType dtype);

}  // namespace onnxkit::python
