#include "eagerflow/core/complex_dtype.h"
#include "eagerflow/core/tensor.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <ostream>

#include "eagerflow/core/allocator.h"
#include "eagerflow/core/device.h"

namespace ef {

Storage::Storage(std::size_t n) : data(allocator::allocate(n)), nbytes(n) {}
Storage::~Storage() { allocator::deallocate(data, nbytes); }

Device Tensor::device() const { return impl().storage ? impl().storage->device : Device::cpu; }

TensorImpl& Tensor::impl() const {
  if (!impl_) throw Error("[tensor] use of an undefined (default-constructed) Tensor");
  return *impl_;
}

Tensor Tensor::empty(DType dtype, const Shape& shape) {
  for (auto d : shape)
    if (d < 0 && d != kDynamic) fail("tensor", "negative dimension " + std::to_string(d) + " in shape " + shape.str());
  if (!shape.is_static())
    fail("tensor", "cannot allocate a tensor of unknown shape " + shape.str());
  // Checked arithmetic: a huge shape must be an error, not an overflowed (small) size.
  std::uint64_t bytes = shape.num_elements() == 0 ? 0 : size_of(dtype);  // a zero dim: nothing to allocate
  for (auto d : shape) {
    if (__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes) || bytes > (std::uint64_t{1} << 48))
      fail(ErrorCode::resource_exhausted, "tensor",
           "shape " + shape.str() + " of " + std::string(name_of(dtype)) + " is too large to allocate");
  }
  auto impl = new_tensor_impl();
  impl->dtype = dtype;
  impl->shape = shape;
  try {
    impl->storage = std::allocate_shared<Storage>(detail::PoolAllocator<Storage>{}, static_cast<std::size_t>(bytes));
    // Every string element starts as a valid empty view: a kernel that writes only some of
    // them never leaves a pointer to nowhere.
    if (dtype == DType::string && bytes) std::memset(impl->storage->data, 0, static_cast<std::size_t>(bytes));
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::resource_exhausted, "tensor",
         "out of memory allocating " + std::to_string(bytes) + " bytes for " + std::string(name_of(dtype)) +
             shape.str());
  }
  return Tensor(std::move(impl));
}

Tensor Tensor::symbolic(DType dtype, Shape shape, std::shared_ptr<ir::Graph> graph, int value) {
  auto impl = new_tensor_impl();
  impl->dtype = dtype;
  impl->shape = std::move(shape);
  impl->graph = std::move(graph);
  impl->value = value;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const {
  check_readable(dtype(), "clone");
  Tensor c = Tensor::empty(dtype(), shape());
  if (nbytes()) std::memcpy(c.raw_mutable_data(), raw_data(), nbytes());
  c.impl().storage->device = device();
  c.impl().storage->string_owners = impl().storage->string_owners;  // the copied views point there
  return c;
}

std::int64_t Tensor::dim(int axis) const {
  std::int64_t d = shape()[normalize_axis(axis, rank(), "dim")];
  if (d == kDynamic)
    fail("dim", "axis " + std::to_string(axis) + " of " + spec().str() +
                    " is dynamic: its size is known only when the graph runs. Use ef::shape(x) (an int64 tensor) "
                    "or ef::size(x) for the runtime shape, or shape-aware ops such as ef::mean, "
                    "ef::reshape(x, {-1, ...}), ef::zeros_like");
  return d;
}

void Tensor::check_readable(DType requested, const char* what) const {
  if (is_keras_tensor())
    fail(ErrorCode::failed_precondition, what,
         "cannot read the value of a Keras tensor " + spec().str() +
             ": it is a placeholder of the functional API (ef::train::Input and the layers called on it). "
             "Build a model with ef::train::Functional(inputs, outputs) and call it on data");
  if (is_symbolic())
    fail(ErrorCode::failed_precondition, what,
         "cannot read the value of a symbolic tensor " + spec().str() +
             ": inside ef::function the value exists only when the graph runs. Use "
             "ef::print(...) to print it at run time, ef::cond(...) to branch on it, or "
             "ef::run_functions_eagerly(true) to debug the function eagerly");
  if (requested != dtype())
    fail(kWrongType, what,
         "requested " + std::string(name_of(requested)) + " from a tensor of dtype " + std::string(name_of(dtype())));
}

const void* Tensor::raw_data() const {
  check_readable(dtype(), "data");
  return static_cast<const char*>(impl().storage->data) + impl().offset;
}
namespace {
// Not a read-modify-write: a lost increment between two racing writers still moves the value
// away from what any reader saw before them.
void note_write(Storage& s) {
  std::atomic_ref<std::uint64_t> version(s.version);
  version.store(version.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
}  // namespace

void* Tensor::raw_mutable_data() {
  check_readable(dtype(), "data");
  note_write(*impl().storage);
  return static_cast<char*>(impl().storage->data) + impl().offset;
}

template <class T> std::span<const T> Tensor::data() const {
  check_readable(dtype_v<T>, "data");
  return {reinterpret_cast<const T*>(static_cast<const char*>(impl().storage->data) + impl().offset),
          static_cast<std::size_t>(num_elements())};
}
template <class T> std::span<T> Tensor::mutable_data() {
  check_readable(dtype_v<T>, "data");
  note_write(*impl().storage);
  return {reinterpret_cast<T*>(static_cast<char*>(impl().storage->data) + impl().offset),
          static_cast<std::size_t>(num_elements())};
}
template <class T> T Tensor::item() const {
  check_readable(dtype_v<T>, "item");
  if (num_elements() != 1)
    fail("item", "needs a tensor with exactly one element, got " + spec().str());
  return data<T>()[0];
}
template <class T> std::vector<T> Tensor::to_vector() const {
  check_readable(dtype_v<T>, "to_vector");
  auto d = data<T>();
  return std::vector<T>(d.begin(), d.end());
}

#define EF_INSTANTIATE(T)                                   \
  template std::span<const T> Tensor::data<T>() const;      \
  template std::span<T> Tensor::mutable_data<T>();          \
  template T Tensor::item<T>() const;                       \
  template std::vector<T> Tensor::to_vector<T>() const;     \
  template Tensor tensor<T>(const std::vector<T>&, const Shape&);

// ---- factories ----
template <class T> Tensor tensor(const std::vector<T>& values, const Shape& shape) {
  if (!shape.is_static() || static_cast<std::int64_t>(values.size()) != shape.num_elements())
    fail("tensor", std::to_string(values.size()) + " values do not fill shape " + shape.str());
  Tensor t = Tensor::empty(dtype_v<T>, shape);
  auto out = t.mutable_data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

EF_INSTANTIATE(float)
EF_INSTANTIATE(double)
EF_INSTANTIATE(std::int32_t)
EF_INSTANTIATE(std::int64_t)
EF_INSTANTIATE(bool)
EF_INSTANTIATE(bfloat16)
EF_INSTANTIATE(float16)
EF_INSTANTIATE(std::uint8_t)
EF_INSTANTIATE(std::int8_t)
EF_INSTANTIATE(std::int16_t)
EF_INSTANTIATE(std::uint16_t)
EF_INSTANTIATE(std::uint32_t)
EF_INSTANTIATE(std::uint64_t)
EF_INSTANTIATE(std::complex<float>)
EF_INSTANTIATE(std::complex<double>)
#undef EF_INSTANTIATE
// String elements are read as views (writing goes through StringTensorBuilder, which keeps the
// bytes alive: eagerflow/core/string_tensor.h).
template std::span<const std::string_view> Tensor::data<std::string_view>() const;
template std::string_view Tensor::item<std::string_view>() const;
template std::vector<std::string_view> Tensor::to_vector<std::string_view>() const;

Tensor tensor(std::initializer_list<float> values) { return tensor(std::vector<float>(values)); }

Tensor tensor(std::initializer_list<std::initializer_list<float>> rows) {
  std::vector<float> flat;
  std::size_t cols = rows.size() ? rows.begin()->size() : 0;
  for (const auto& r : rows) {
    if (r.size() != cols) fail("tensor", "ragged rows: every row needs the same length");
    flat.insert(flat.end(), r.begin(), r.end());
  }
  return tensor(flat, Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)});
}

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(dtype, shape);
  if (dtype == DType::complex64) {
    for (auto& x : t.mutable_data<std::complex<float>>()) x = {static_cast<float>(value), 0.0f};
    return t;
  }
  if (dtype == DType::complex128) {
    for (auto& x : t.mutable_data<std::complex<double>>()) x = {value, 0.0};
    return t;
  }
  dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = saturate_cast<T>(value);
    for (auto& x : t.mutable_data<T>()) x = v;
  });
  return t;
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor arange(double start, double stop, double step, DType dtype) {
  if (step == 0) fail("arange", "step must not be zero");
  if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
    fail("arange", "start, stop and step must be finite, got " + std::to_string(start) + ", " + std::to_string(stop) +
                       ", " + std::to_string(step));
  if (is_integer(dtype) && (start != std::trunc(start) || stop != std::trunc(stop) || step != std::trunc(step)))
    fail("arange", "an " + std::string(name_of(dtype)) + " range needs whole numbers, got start " +
                       std::to_string(start) + ", stop " + std::to_string(stop) + ", step " + std::to_string(step) +
                       " (truncating them would give another range); use a floating dtype");
  double count = std::ceil((stop - start) / step);
  if (!(count < 0x1p48)) fail("arange", "[" + std::to_string(start) + ", " + std::to_string(stop) + ") with step " +
                                            std::to_string(step) + " has too many elements");
  auto n = count > 0 ? static_cast<std::int64_t>(count) : std::int64_t{0};
  Tensor t = Tensor::empty(dtype, Shape{n});
  dispatch_storage_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto d = t.mutable_data<T>();
    for (std::int64_t i = 0; i < n; ++i) d[i] = saturate_cast<T>(start + static_cast<double>(i) * step);
  });
  return t;
}
Tensor arange(std::int64_t stop, DType dtype) { return arange(0.0, static_cast<double>(stop), 1.0, dtype); }

}  // namespace ef
