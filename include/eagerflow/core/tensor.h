#pragma once
// Tensor: a cheap, shared handle. Concrete tensors own row-major storage (shared between
// views); symbolic tensors exist only inside a trace and name a value of the graph being built.
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/core/dtype.h"
#include "eagerflow/core/error.h"
#include "eagerflow/core/pool_allocator.h"
#include "eagerflow/core/shape.h"

namespace ef {

namespace ir { class Graph; }
enum class Device : std::uint8_t;  // eagerflow/core/device.h (not included: most programs never name one)
struct KerasNode;  // eagerflow/trace/keras_tensor.h

struct Storage {
  void* data = nullptr;
  std::size_t nbytes = 0;
  Device device{};  // Device::cpu
  // The bytes a string tensor's views point into (eagerflow/core/string_tensor.h).
  std::vector<std::shared_ptr<const void>> string_owners;
  // Moves on every request for a writable pointer (Tensor::mutable_data, raw_mutable_data), the
  // only way to write the bytes: what is derived from them and kept (the GEMM's packed weights)
  // compares it to know they are unchanged. Read and written through std::atomic_ref (src/),
  // which keeps <atomic> out of this header.
  std::uint64_t version = 0;
  explicit Storage(std::size_t n);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

struct TensorImpl {
  DType dtype = DType::float32;
  Shape shape;
  std::shared_ptr<Storage> storage;  // null for symbolic tensors
  std::size_t offset = 0;            // bytes into storage
  // Symbolic: the graph under construction and the value's id in it.
  std::shared_ptr<ir::Graph> graph;
  int value = -1;  // for Keras tensors: which output of keras_node
  // Keras tensors (the functional API): no value, no graph; the layer call or op that makes
  // them, which records the model's structure.
  std::shared_ptr<const KerasNode> keras_node;
};

// Tensor records come from a per-thread block cache: replays allocate no handles.
template <class... Args>
std::shared_ptr<TensorImpl> new_tensor_impl(Args&&... args) {
  return std::allocate_shared<TensorImpl>(detail::PoolAllocator<TensorImpl>{}, std::forward<Args>(args)...);
}

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Uninitialized concrete tensor (shape must be static).
  static Tensor empty(DType dtype, const Shape& shape);
  static Tensor symbolic(DType dtype, Shape shape, std::shared_ptr<ir::Graph> graph, int value);

  bool defined() const { return impl_ != nullptr; }
  DType dtype() const { return impl().dtype; }
  const Shape& shape() const { return impl().shape; }
  int rank() const { return impl().shape.rank(); }
  // The size of one axis (negative axes count from the end). A dynamic dim (inside a trace)
  // is an error pointing to ef::shape: it has no value until the graph runs.
  std::int64_t dim(int axis) const;
  std::int64_t num_elements() const { return impl().shape.num_elements(); }
  std::size_t nbytes() const { return static_cast<std::size_t>(num_elements()) * size_of(dtype()); }
  TensorSpec spec() const { return {dtype(), shape(), {}}; }
  bool is_symbolic() const { return impl().graph != nullptr; }
  // Where the storage lives (eagerflow/core/device.h); cpu for tensors without storage.
  Device device() const;
  // A placeholder of the functional API (ef::train::Input and what layers make of it).
  bool is_keras_tensor() const { return impl().keras_node != nullptr; }

  // Reading values. Throws on symbolic tensors (the value exists only when the graph runs)
  // and on dtype mismatches.
  template <class T> T item() const;
  template <class T> std::vector<T> to_vector() const;
  template <class T> std::span<const T> data() const;
  template <class T> std::span<T> mutable_data();  // moves Storage::version: ask anew for each write
  const void* raw_data() const;
  void* raw_mutable_data();  // the same: a pointer kept and written after products go unseen

  std::string str() const;  // TF-style: Tensor([[1. 2.]], shape=(1, 2), dtype=float32)
  // A concrete copy with storage of its own (like torch's clone).
  Tensor clone() const;

  // Identity of the underlying handle (not of values).
  bool same_as(const Tensor& o) const { return impl_ == o.impl_; }
  TensorImpl& impl() const;
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  void check_readable(DType requested, const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);
// Just the values, NumPy-style ("[[1. 2.]\n [3. 4.]]"); continuation lines are indented by
// `indent` + 1 spaces.
std::string format_values(const Tensor& t, int indent = 0);

// ---- factories ----
template <class T> Tensor tensor(const std::vector<T>& values, const Shape& shape);
template <class T> Tensor tensor(const std::vector<T>& values) {
  return tensor(values, Shape{static_cast<std::int64_t>(values.size())});
}
Tensor tensor(std::initializer_list<float> values);
Tensor tensor(std::initializer_list<std::initializer_list<float>> rows);
template <class T> Tensor scalar(T value) { return tensor(std::vector<T>{value}, Shape{}); }

Tensor zeros(const Shape& shape, DType dtype = DType::float32);
Tensor ones(const Shape& shape, DType dtype = DType::float32);
Tensor full(const Shape& shape, double value, DType dtype = DType::float32);
// [start, stop) with step, like numpy.arange. An integer dtype takes whole numbers only (a
// fraction would be truncated into a different range: an error, as in TF).
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::float32);
Tensor arange(std::int64_t stop, DType dtype = DType::int64);
// A floating stop counts in floats (float32 by default): without this, arange(2.5) would
// convert to the int64 overload above and truncate to [0, 1].
template <std::floating_point F>
Tensor arange(F stop, DType dtype = DType::float32) {
  return arange(0.0, static_cast<double>(stop), 1.0, dtype);
}

}  // namespace ef
