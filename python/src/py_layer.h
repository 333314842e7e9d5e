#pragma once
// The trampoline behind layers and models written in Python: the package's Layer/Model define
// _ef_build and _ef_call, which call the user's build(input_shape) and call(inputs[, training]).
// Every override takes the GIL: fit, predict and replay run C++ with it released.
#include <nanobind/trampoline.h>

#include <type_traits>

#include "bindings.h"
#include "eagerflow/train/model.h"

namespace efpy {

// What the bindings of add_weight/_track need from any Python layer, whatever its C++ base.
struct PyLayerAccess {
  virtual ~PyLayerAccess() = default;
  virtual ef::Variable add_weight_(const std::string& name, const ef::Shape& shape, const ef::nn::Initializer& init,
                                   bool trainable, ef::DType dtype) = 0;
  virtual void track_(ef::nn::Layer& child) = 0;
};

nb::tuple shape_tuple(const ef::Shape& s);

template <class Base>
class PyLayerT : public Base, public PyLayerAccess {
 public:
  NB_TRAMPOLINE(Base);

  void build(const ef::Shape& input_shape) override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_build", nb::detail::str_hash("_ef_build"), false);
    if (t.key.is_valid()) nb_trampoline.base().attr(t.key)(shape_tuple(input_shape));
  }
  void build(const std::vector<ef::Shape>& input_shapes) override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_build", nb::detail::str_hash("_ef_build"), false);
    if (!t.key.is_valid()) return;
    nb::list shapes;
    for (const auto& s : input_shapes) shapes.append(shape_tuple(s));
    nb_trampoline.base().attr(t.key)(shapes);
  }
  ef::Tensor call(const ef::Tensor& inputs, bool training) override {
    if (runs_graph()) return Base::call(inputs, training);
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_call", nb::detail::str_hash("_ef_call"), false);
    if (!t.key.is_valid()) return Base::call(inputs, training);
    return to_tensor(nb_trampoline.base().attr(t.key)(inputs, training));
  }
  ef::Tensor call(const std::vector<ef::Tensor>& inputs, bool training) override {
    if (runs_graph()) return Base::call(inputs, training);
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_call", nb::detail::str_hash("_ef_call"), false);
    if (!t.key.is_valid()) return Base::call(inputs, training);
    return to_tensor(nb_trampoline.base().attr(t.key)(nb::cast(inputs), training));
  }

  ef::Variable add_weight_(const std::string& name, const ef::Shape& shape, const ef::nn::Initializer& init,
                           bool trainable, ef::DType dtype) override {
    return this->add_weight(name, shape, init, trainable, dtype);
  }
  void track_(ef::nn::Layer& child) override { this->track(child); }

 private:
  // A Model made with Model(inputs, outputs) in Python runs its layer graph, not a Python call().
  bool runs_graph() const {
    if constexpr (std::is_base_of_v<ef::train::Model, Base>) return this->functional_graph() != nullptr;
    else return false;
  }
};

}  // namespace efpy
