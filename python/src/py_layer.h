#pragma once
// The trampoline behind layers and models written in Python: the package's Layer/Model define
// _ef_build and _ef_call, which call the user's build(input_shape) and call(inputs[, training]).
// Every override takes the GIL: fit, predict and replay run C++ with it released.
#include <nanobind/trampoline.h>

#include <type_traits>

#include "bindings.h"
#include "eagerflow/nn/layer_config.h"
#include "eagerflow/train/model.h"

namespace efpy {

// What the bindings of add_weight/_track need from any Python layer, whatever its C++ base.
struct PyLayerAccess {
  virtual ~PyLayerAccess() = default;
  virtual ef::Variable add_weight_(const std::string& name, const ef::Shape& shape, const ef::nn::Initializer& init,
                                   bool trainable, ef::DType dtype) = 0;
  virtual void track_(ef::nn::Layer& child) = 0;
  // How the last call() returned its outputs, so that layer(x) gives the user's structure back.
  enum class OutputKind { single, tuple, list };
  virtual OutputKind output_kind() const = 0;
  // Whether the next call passes its inputs to call() as a list (layer([x]) rather than layer(x)).
  virtual void set_list_input(bool list) = 0;
  // The Python class's name (Layer::type_name, for summary() and errors).
  virtual std::string python_type_name() const = 0;
};

// The outputs of a Python call(): one tensor, or a tuple/list of them (a layer with several
// outputs). Anything else, a dict say, is an ef::Error naming the layer.
std::vector<ef::Tensor> call_results(const std::string& layer, nb::handle result, PyLayerAccess::OutputKind& kind);

// Keras configs between Python and C++ (python/src/saving_keras.cpp): None, bool, int, float,
// str, lists/tuples and dicts with str keys; anything else is a TypeError naming the key.
ef::nn::ConfigMap config_map_from_py(nb::handle dict, const std::string& where);
nb::object py_from_config(const ef::nn::ConfigValue& value);

nb::tuple shape_tuple(const ef::Shape& s);

template <class Base>
class PyLayerT : public Base, public PyLayerAccess {
 public:
  NB_TRAMPOLINE(Base);

  std::string python_type_name() const override {
    nb::gil_scoped_acquire gil;
    return nb::cast<std::string>(nb_trampoline.base().type().attr("__name__"));
  }

  void build(const ef::Shape& input_shape) override {
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_build", nb::detail::str_hash("_ef_build"), false);
    if (!t.key.is_valid()) return;
    if (list_input_) {  // layer([x]): build sees a list of one shape, as call sees a list
      nb::list shapes;
      shapes.append(shape_tuple(input_shape));
      nb_trampoline.base().attr(t.key)(shapes);
    } else {
      nb_trampoline.base().attr(t.key)(shape_tuple(input_shape));
    }
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
    return one_output(nb_trampoline.base().attr(t.key)(inputs, training));
  }
  ef::Tensor call(const std::vector<ef::Tensor>& inputs, bool training) override {
    if (runs_graph()) return Base::call(inputs, training);
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_call", nb::detail::str_hash("_ef_call"), false);
    if (!t.key.is_valid()) return Base::call(inputs, training);
    return one_output(nb_trampoline.base().attr(t.key)(nb::cast(inputs), training));
  }
  // Every output: what layer(x) from Python and a model's fit/predict use, so that a call()
  // returning a tuple gives several outputs instead of being stacked into one tensor.
  std::vector<ef::Tensor> call_multi(const std::vector<ef::Tensor>& inputs, bool training) override {
    if (runs_graph()) return Base::call_multi(inputs, training);
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_call", nb::detail::str_hash("_ef_call"), false);
    if (!t.key.is_valid()) return Base::call_multi(inputs, training);
    nb::object arg = inputs.size() == 1 && !list_input_ ? nb::cast(inputs[0]) : nb::cast(inputs);
    return call_results(this->name(), nb_trampoline.base().attr(t.key)(arg, training), kind_);
  }

  // A layer written in Python saves the config its get_config() returns, under its registered
  // name (ef.keras.saving.register_keras_serializable); its factory calls from_config.
  std::optional<ef::nn::LayerConfig> get_config() const override {
    if (runs_graph()) return Base::get_config();
    nb::gil_scoped_acquire gil;
    nb::detail::ticket t(nb_trampoline, "_ef_get_config", nb::detail::str_hash("_ef_get_config"), false);
    if (!t.key.is_valid()) return Base::get_config();
    nb::object r = nb_trampoline.base().attr(t.key)();
    if (r.is_none()) return Base::get_config();
    auto cls = nb::cast<std::string>(r[0]);
    return ef::nn::LayerConfig{cls, config_map_from_py(r[1], "layer '" + this->name() + "' (" + cls + ") get_config()")};
  }

  ef::Variable add_weight_(const std::string& name, const ef::Shape& shape, const ef::nn::Initializer& init,
                           bool trainable, ef::DType dtype) override {
    return this->add_weight(name, shape, init, trainable, dtype);
  }
  void track_(ef::nn::Layer& child) override { this->track(child); }
  OutputKind output_kind() const override { return kind_; }
  void set_list_input(bool list) override { list_input_ = list; }

 private:
  // A single-output call() (the layer inside a C++ container such as Sequential, which passes
  // one tensor on): several outputs are an error, not a tensor stacked from them.
  ef::Tensor one_output(nb::handle result) {
    OutputKind kind;
    std::vector<ef::Tensor> outs = call_results(this->name(), result, kind);
    if (outs.size() != 1)
      throw ef::Error("layer '" + this->name() + "': call() returned " + std::to_string(outs.size()) +
                      " outputs where one is expected (a layer inside Sequential passes one tensor on; "
                      "call it directly or in a functional model to get several)");
    return outs[0];
  }
  OutputKind kind_ = OutputKind::single;
  bool list_input_ = false;
  // A Model made with Model(inputs, outputs) in Python runs its layer graph, not a Python call().
  bool runs_graph() const {
    if constexpr (std::is_base_of_v<ef::train::Model, Base>) return this->functional_graph() != nullptr;
    else return false;
  }
};

}  // namespace efpy
