#include "numpy_tensor.h"

#include <pybind11/complex.h>

#include <complex>
#include <cstring>
#include <string_view>
#include <utility>

namespace onnxkit::python {
namespace {

// ml_dtypes' names for the ONNX types numpy itself lacks (ml_dtypes ships with onnx).
struct ExtendedType {
  DType dtype;
  const char* name;
};
constexpr ExtendedType kExtendedTypes[] = {{DType::kBFloat16, "bfloat16"},
                                           {DType::kFloat8E4M3FN, "float8_e4m3fn"},
                                           {DType::kFloat8E4M3FNUZ, "float8_e4m3fnuz"},
                                           {DType::kFloat8E5M2, "float8_e5m2"},
                                           {DType::kFloat8E5M2FNUZ, "float8_e5m2fnuz"},
                                           {DType::kInt4, "int4"},
                                           {DType::kUInt4, "uint4"},
                                           {DType::kFloat4E2M1, "float4_e2m1fn"},
                                           {DType::kFloat8E8M0, "float8_e8m0fnu"},
                                           {DType::kInt2, "int2"},
                                           {DType::kUInt2, "uint2"}};

bool is_string_kind(char kind) {
  return kind == 'U' || kind == 'S' || kind == 'O';
}

FedInput strings_from_array(const std::string& input_name, const py::array& array) {
  Shape shape(array.shape(), array.shape() + array.ndim());
  std::vector<std::string> values;
  values.reserve(static_cast<size_t>(array.size()));
  py::object flat = array.attr("ravel")();
  for (const py::handle item : flat) {
    if (py::isinstance<py::bytes>(item)) {
      values.push_back(item.cast<std::string>());
    } else if (py::isinstance<py::str>(item)) {
      values.push_back(item.cast<std::string>());
    } else {
      throw py::type_error("input '" + input_name + "': a string tensor's elements must be str " +
                           "or bytes, got " +
                           std::string(py::str(py::type::handle_of(item).attr("__name__"))));
    }
  }
  return FedInput{RuntimeValue(Tensor::from_strings(std::move(shape), std::move(values))), {}};
}

FedInput tensor_from_array(const std::string& input_name, py::array array) {
  const char kind = array.dtype().kind();
  if (is_string_kind(kind)) return strings_from_array(input_name, array);
  DType dtype = dtype_from_numpy(array.dtype());
  if (dtype == DType::kUndefined) {
    throw py::type_error("input '" + input_name + "': numpy dtype " +
                         std::string(py::str(array.dtype())) + " has no ONNX element type");
  }
  // Views onto the caller's memory need C order, alignment and native byte order; anything
  // else is copied once into an array that has them.
  if (array.dtype().byteorder() == '>') {
    array = array.attr("astype")(array.dtype().attr("newbyteorder")("="));
  }
  constexpr int kViewable = static_cast<int>(py::array::c_style) |
                            static_cast<int>(py::detail::npy_api::NPY_ARRAY_ALIGNED_);
  if ((array.flags() & kViewable) != kViewable) array = py::array::ensure(array, kViewable);
  Shape shape(array.shape(), array.shape() + array.ndim());
  Tensor tensor = Tensor::external(dtype, std::move(shape), static_cast<const void*>(array.data()));
  FedInput fed{RuntimeValue(std::move(tensor)), {}};
  fed.keep_alive.push_back(std::move(array));
  return fed;
}

py::array as_array(const std::string& input_name, const py::handle& object) {
  if (py::isinstance<py::array>(object)) return py::reinterpret_borrow<py::array>(object);
  try {
    return py::module_::import("numpy").attr("asarray")(object);
  } catch (py::error_already_set& error) {
    throw py::type_error("input '" + input_name + "': cannot make an array of a " +
                         std::string(py::str(py::type::handle_of(object).attr("__name__"))) + ": " +
                         error.what());
  }
}

}  // namespace

DType dtype_from_numpy(const py::dtype& dtype) {
  const size_t size = static_cast<size_t>(dtype.itemsize());
  switch (dtype.kind()) {
    case 'f':
      return size == 2   ? DType::kFloat16
             : size == 4 ? DType::kFloat
             : size == 8 ? DType::kDouble
                         : DType::kUndefined;
    case 'i':
      return size == 1   ? DType::kInt8
             : size == 2 ? DType::kInt16
             : size == 4 ? DType::kInt32
             : size == 8 ? DType::kInt64
                         : DType::kUndefined;
    case 'u':
      return size == 1   ? DType::kUInt8
             : size == 2 ? DType::kUInt16
             : size == 4 ? DType::kUInt32
             : size == 8 ? DType::kUInt64
                         : DType::kUndefined;
    case 'b':
      return DType::kBool;
    case 'c':
      return size == 8 ? DType::kComplex64 : size == 16 ? DType::kComplex128 : DType::kUndefined;
    case 'U':
    case 'S':
    case 'O':
      return DType::kString;
    default: {
      const std::string name = py::str(dtype.attr("name"));
      for (const ExtendedType& type : kExtendedTypes) {
        if (name == type.name && size == 1 + (type.dtype == DType::kBFloat16)) return type.dtype;
      }
      return DType::kUndefined;
    }
  }
}

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat:
      return py::dtype::of<float>();
    case DType::kDouble:
      return py::dtype::of<double>();
    case DType::kFloat16:
      return py::dtype("float16");
    case DType::kInt8:
      return py::dtype::of<int8_t>();
    case DType::kInt16:
      return py::dtype::of<int16_t>();
    case DType::kInt32:
      return py::dtype::of<int32_t>();
    case DType::kInt64:
      return py::dtype::of<int64_t>();
    case DType::kUInt8:
      return py::dtype::of<uint8_t>();
    case DType::kUInt16:
      return py::dtype::of<uint16_t>();
    case DType::kUInt32:
      return py::dtype::of<uint32_t>();
    case DType::kUInt64:
      return py::dtype::of<uint64_t>();
    case DType::kBool:
      return py::dtype::of<bool>();
    case DType::kComplex64:
      return py::dtype::of<std::complex<float>>();
    case DType::kComplex128:
      return py::dtype::of<std::complex<double>>();
    case DType::kString:
      return py::dtype("O");
    default:
      break;
  }
  for (const ExtendedType& type : kExtendedTypes) {
    if (type.dtype == dtype) {
      return py::reinterpret_borrow<py::dtype>(py::module_::import("numpy").attr("dtype")(
          py::module_::import("ml_dtypes").attr(type.name)));
    }
  }
  throw Error("no numpy dtype for ONNX element type " + std::string(dtype_name(dtype)));
}

FedInput tensor_from_python(const std::string& input_name, const py::handle& object,
                            bool expects_sequence) {
  if (expects_sequence && (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object))) {
    FedInput fed;
    std::vector<Tensor> items;
    for (const py::handle item : object) {
      FedInput element = tensor_from_array(input_name, as_array(input_name, item));
      items.push_back(element.value.tensor());
      for (auto& owner : element.keep_alive) fed.keep_alive.push_back(std::move(owner));
    }
    fed.value = RuntimeValue::sequence(std::move(items));
    return fed;
  }
  if (object.is_none()) return FedInput{};
  return tensor_from_array(input_name, as_array(input_name, object));
}

py::object numpy_from_tensor(Tensor tensor) {
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (tensor.dtype() == DType::kString) {
    py::array result(py::dtype("O"), shape);
    auto** slots = static_cast<PyObject**>(result.mutable_data());
    const auto& strings = tensor.strings();
    for (size_t i = 0; i < strings.size(); ++i) {
      // The array holds None references after creation; replace each with a str.
      py::str value(strings[i]);
      Py_XDECREF(slots[i]);
      slots[i] = value.release().ptr();
    }
    return result;
  }
  py::dtype dtype = numpy_dtype(tensor.dtype());
  auto* owner = new Tensor(std::move(tensor));
  // Exclusive, writable bytes: the output's own memory unless another tensor shares it.
  void* data = owner->numel() > 0 ? owner->mutable_raw_data() : nullptr;
  py::capsule base(owner, [](void* pointer) { delete static_cast<Tensor*>(pointer); });
  if (data == nullptr) return py::array(dtype, shape);
  return py::array(dtype, shape, {}, data, base);
}

py::object python_from_value(RuntimeValue value) {
  switch (value.kind()) {
    case RuntimeValue::Kind::kNone:
      return py::none();
    case RuntimeValue::Kind::kTensor:
      return numpy_from_tensor(std::move(value.mutable_tensor()));
    case RuntimeValue::Kind::kSequence: {
      py::list items;
      for (const Tensor& item : value.sequence_items()) items.append(numpy_from_tensor(item));
      return items;
    }
  }
  return py::none();
}

}  // namespace onnxkit::python
