#pragma once
// Python values at the boundary: tensors from Python numbers, lists and arrays (convert.cpp),
// and the integers, numbers and shapes the bindings take as arguments. A value that has the
// wrong type raises TypeError naming the argument and what it accepts; one that does not fit
// raises ef.ConversionError (a TypeError and a ValueError at once); never nanobind's bare
// std::bad_cast, never a wrapped or truncated number.
#include <cstdint>
#include <string>
#include <vector>

#include "bindings.h"

namespace efpy {

nb::module_& numpy_module();

// "str 'abc'", "float 1.5": the type and a short repr of a value, for messages.
std::string describe(nb::handle h);

// Raises ef.ConversionError with the message.
[[noreturn]] void conversion_error(const std::string& message);
bool is_conversion_error(nb::python_error& e);
// Raises ef.errors.InvalidArgumentError (an ef.Error and a ValueError) with the message (errors.cpp).
[[noreturn]] void invalid_argument(const std::string& message);
// The kind of a Python exception, for a C++ error that carries it on (a dataset function's or a
// scan body's): an ef.errors class's own code (and its TypeError, ...); for Python's built-ins
// the codes TF's py_function gives them (ValueError INVALID_ARGUMENT, TypeError too, with
// TypeError kept, NotImplementedError UNIMPLEMENTED, StopIteration and IndexError OUT_OF_RANGE,
// MemoryError RESOURCE_EXHAUSTED, FileNotFoundError NOT_FOUND), UNKNOWN for the rest. Needs the GIL.
ef::ErrorKind kind_of_python(nb::python_error& e);

// An integer: a Python int, a NumPy integer, or anything with __index__ (a 0-d integer tensor).
std::int64_t int_arg(nb::handle h, const char* what);
// A real number: a Python or NumPy number, or a 0-d tensor.
double float_arg(nb::handle h, const char* what);
// Dimensions: an int, or a sequence of ints (None for a dimension left unknown when
// allow_unknown, as ef::kDynamic).
std::vector<std::int64_t> dims_arg(nb::handle h, const char* what, bool allow_unknown = true);

// Axes: None (every axis: empty), an int or a sequence of ints.
std::vector<int> axes_arg(nb::handle h, const char* what);
// A random seed: a non-negative int below 2^64.
std::uint64_t seed_arg(nb::handle h, const char* what);

// A tensor of dtype `d` from a Python value: numbers and lists are converted straight to `d`
// and arrays cast, each refusing values `d` cannot hold (2**40 as int32, 1.5 as an integer,
// uint64 above 2^63). An ef.Tensor (or Variable) is returned as it is: the caller decides.
ef::Tensor to_tensor_as(nb::handle h, ef::DType d);
// A fill value (a Python number or 0-d tensor) for a tensor of dtype `d`, as the double the C++
// factories take; refuses values `d` cannot hold and int64 values a double would round.
double fill_value(nb::handle h, ef::DType d, const char* what);
// `t` (made from a Python value) as dtype `d`, refusing the values `d` cannot hold.
ef::Tensor checked_cast(const ef::Tensor& t, ef::DType d);

void init_convert(nb::module_& m);  // ef.ConversionError; after init_errors
}  // namespace efpy
