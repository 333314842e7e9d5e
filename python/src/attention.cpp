// Attention from Python (eagerflow/nn/attention.h): ef.nn.scaled_dot_product_attention,
// ef.keras.layers.MultiHeadAttention (Keras 3's arguments and call) and PositionalEmbedding.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "py_layer.h"  // py_from_config, config_map_from_py

namespace efpy {
namespace {

using ef::Tensor;
using ef::nn::ConfigMap;
using ef::nn::ConfigValue;
using ef::nn::Layer;
using ef::nn::MultiHeadAttention;
using ef::nn::PositionalEmbedding;

std::optional<Tensor> optional_tensor(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return to_tensor(h);
}

// Keras' output_shape: an int, or a 1-tuple (the output's last dim).
std::optional<std::int64_t> output_dim_of(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  if (PyIndex_Check(h.ptr())) return int_arg(h, "MultiHeadAttention: output_shape");
  std::vector<std::int64_t> v = dims_arg(h, "MultiHeadAttention: output_shape", /*allow_unknown=*/false);
  if (v.size() != 1)
    throw nb::value_error("MultiHeadAttention: output_shape must be an int or a 1-tuple (the output's last dim)");
  return v[0];
}

void reject(nb::handle value, const char* what) {
  if (!value.is_none())
    throw nb::value_error((std::string("MultiHeadAttention: ") + what + " is not supported (pass None)").c_str());
}

}  // namespace

void init_attention(nb::module_& m) {
  nb::module_ nn = m.def_submodule("nn", "Neural-network functions (eagerflow/nn/attention.h)");
  nn.def(
      "scaled_dot_product_attention",
      [](nb::handle q, nb::handle k, nb::handle v, nb::handle mask, bool is_causal, std::optional<double> scale,
         double dropout, std::optional<std::uint64_t> seed, const std::string& layout) {
        if (layout != "bhsd" && layout != "bshd")
          throw nb::value_error("scaled_dot_product_attention: layout must be 'bhsd' or 'bshd'");
        ef::nn::AttentionOptions o;
        o.bshd = layout == "bshd";
        if (auto t = optional_tensor(mask)) o.mask = *t;
        o.causal = is_causal;
        o.scale = scale;
        o.dropout = dropout;
        o.seed = seed;
        Tensor tq = to_tensor(q), tk = to_tensor(k, &tq), tv = to_tensor(v, &tq);
        nb::gil_scoped_release release;
        return ef::nn::scaled_dot_product_attention(tq, tk, tv, o);
      },
      nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("mask") = nb::none(), nb::arg("is_causal") = false,
      nb::arg("scale") = nb::none(), nb::arg("dropout") = 0.0, nb::arg("seed") = nb::none(), nb::arg("layout") = "bhsd",
      "softmax(scale q k^T, masked) v for [batch, heads, seq, head_dim] tensors (layout='bshd': [batch, seq, heads, "
      "head_dim], Keras' and JAX's), fused (linear memory). mask: bool, broadcastable to [batch, heads, q_len, k_len], "
      "True = attend.");
  nn.def(
      "attention_probabilities",
      [](nb::handle q, nb::handle k, nb::handle mask, bool is_causal, std::optional<double> scale) {
        ef::nn::AttentionOptions o;
        if (auto t = optional_tensor(mask)) o.mask = *t;
        o.causal = is_causal;
        o.scale = scale;
        Tensor tq = to_tensor(q), tk = to_tensor(k, &tq);
        return ef::nn::attention_probabilities(tq, tk, o);
      },
      nb::arg("query"), nb::arg("key"), nb::arg("mask") = nb::none(), nb::arg("is_causal") = false,
      nb::arg("scale") = nb::none());

  nb::class_<MultiHeadAttention, Layer>(m, "MultiHeadAttention")
      .def(
          "__init__",
          [](MultiHeadAttention* self, std::int64_t num_heads, std::int64_t key_dim, std::optional<std::int64_t> value_dim,
             double dropout, bool use_bias, nb::handle output_shape, nb::handle attention_axes,
             const std::string& kernel_initializer, const std::string& bias_initializer, nb::handle kernel_regularizer,
             nb::handle bias_regularizer, nb::handle activity_regularizer, nb::handle kernel_constraint,
             nb::handle bias_constraint, std::optional<std::uint64_t> seed, std::optional<std::string> name) {
            reject(attention_axes, "attention_axes other than the sequence axis");
            reject(kernel_regularizer, "kernel_regularizer");
            reject(bias_regularizer, "bias_regularizer");
            reject(activity_regularizer, "activity_regularizer");
            reject(kernel_constraint, "kernel_constraint");
            reject(bias_constraint, "bias_constraint");
            ef::nn::MultiHeadAttentionOptions o;
            o.value_dim = value_dim;
            o.dropout = dropout;
            o.use_bias = use_bias;
            o.output_shape = output_dim_of(output_shape);
            o.kernel_initializer = kernel_initializer;
            o.bias_initializer = bias_initializer;
            o.seed = seed;
            new (self) MultiHeadAttention(num_heads, key_dim, o, name.value_or(""));
          },
          nb::arg("num_heads"), nb::arg("key_dim"), nb::arg("value_dim") = nb::none(), nb::arg("dropout") = 0.0,
          nb::arg("use_bias") = true, nb::arg("output_shape") = nb::none(), nb::arg("attention_axes") = nb::none(),
          nb::arg("kernel_initializer") = "glorot_uniform", nb::arg("bias_initializer") = "zeros",
          nb::arg("kernel_regularizer") = nb::none(), nb::arg("bias_regularizer") = nb::none(),
          nb::arg("activity_regularizer") = nb::none(), nb::arg("kernel_constraint") = nb::none(),
          nb::arg("bias_constraint") = nb::none(), nb::arg("seed") = nb::none(), nb::arg("name") = nb::none())
      .def(
          "__call__",
          [](nb::handle self, nb::handle query, nb::handle value, nb::handle key, nb::handle attention_mask,
             bool return_attention_scores, nb::handle training, bool use_causal_mask, nb::handle query_mask,
             nb::handle value_mask, nb::handle key_mask) -> nb::object {
            reject(query_mask, "query_mask");
            reject(value_mask, "value_mask");
            reject(key_mask, "key_mask");
            MultiHeadAttention& layer = nb::cast<MultiHeadAttention&>(self);
            MultiHeadAttention::Call c;
            Tensor q = to_tensor(query), v = to_tensor(value);
            if (auto t = optional_tensor(key)) c.key = *t;
            if (auto t = optional_tensor(attention_mask)) c.attention_mask = *t;
            c.use_causal_mask = use_causal_mask;
            if (!training.is_none()) c.training = nb::cast<bool>(training);  // None: the layer decides
            // On Keras tensors the functional graph keeps the layer: hold it by its shared_ptr.
            std::vector<Tensor> all{q, v};
            if (c.key.defined()) all.push_back(c.key);
            if (c.attention_mask.defined()) all.push_back(c.attention_mask);
            std::shared_ptr<Layer> keep;
            if (ef::detail::any_keras_tensor(all)) keep = nb::cast<std::shared_ptr<Layer>>(self);
            if (return_attention_scores) {
              std::pair<Tensor, Tensor> r;
              {
                nb::gil_scoped_release release;
                r = layer.call_with_scores(q, v, c);
              }
              drain_log_warnings();
              return nb::make_tuple(r.first, r.second);
            }
            Tensor out;
            {
              nb::gil_scoped_release release;
              out = layer(q, v, c);
            }
            drain_log_warnings();
            return nb::cast(out);
          },
          nb::arg("query"), nb::arg("value"), nb::arg("key") = nb::none(), nb::arg("attention_mask") = nb::none(),
          nb::arg("return_attention_scores") = false, nb::arg("training") = nb::none(),
          nb::arg("use_causal_mask") = false, nb::arg("query_mask") = nb::none(), nb::arg("value_mask") = nb::none(),
          nb::arg("key_mask") = nb::none())
      .def_prop_ro("num_heads", &MultiHeadAttention::num_heads)
      .def_prop_ro("key_dim", &MultiHeadAttention::key_dim)
      .def_prop_ro("value_dim", &MultiHeadAttention::value_dim)
      .def_prop_ro("dropout", [](const MultiHeadAttention& l) { return l.options().dropout; })
      .def_prop_ro("use_bias", [](const MultiHeadAttention& l) { return l.options().use_bias; })
      .def("get_config", [](const MultiHeadAttention& l) { return py_from_config(ConfigValue(l.get_config()->config)); })
      .def_static(
          "from_config",
          [](nb::handle config) {
            ef::nn::LayerConfig c{"MultiHeadAttention", config_map_from_py(config, "MultiHeadAttention.from_config")};
            c.config.where = "MultiHeadAttention.from_config";
            std::shared_ptr<Layer> layer = ef::nn::layer_from_config(c, "MultiHeadAttention.from_config");
            return std::static_pointer_cast<MultiHeadAttention>(layer);
          },
          nb::arg("config"));

  nb::class_<PositionalEmbedding, Layer>(m, "PositionalEmbedding")
      .def(
          "__init__",
          [](PositionalEmbedding* self, std::int64_t vocabulary_size, std::int64_t sequence_length,
             std::int64_t embedding_dim, std::optional<std::string> name) {
            new (self) PositionalEmbedding(vocabulary_size, sequence_length, embedding_dim, name.value_or(""));
          },
          nb::arg("vocabulary_size"), nb::arg("sequence_length"), nb::arg("embedding_dim"),
          nb::arg("name") = nb::none())
      .def_prop_ro("token_embeddings", &PositionalEmbedding::token_embeddings)
      .def_prop_ro("position_embeddings", &PositionalEmbedding::position_embeddings)
      .def("get_config", [](const PositionalEmbedding& l) { return py_from_config(ConfigValue(l.get_config()->config)); });
}

}  // namespace efpy
