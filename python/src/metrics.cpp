// Keras' metrics beyond the accuracies (MAE, MSE, RMSE, AUC, Precision, Recall, top-k
// accuracies, F1Score) and the sample_weight forms of losses and metrics. The classes join the
// `_train` submodule that init_training made; the Loss and Metric classes bound there get
// extra overloads here (a function defined with the scope and name of an existing one joins
// its overload chain: the two-argument forms stay as they are, tried first).
#include <optional>
#include <string>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"

namespace efpy {
namespace {

using ef::Tensor;
using namespace ef::train;

Tensor optional_tensor(nb::handle h) { return h.is_none() ? Tensor() : to_tensor(h); }

// Keras' `thresholds`: None, a number, or a list of numbers.
std::vector<double> thresholds_of(nb::handle h) {
  if (h.is_none()) return {};
  if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr())) return {float_arg(h, "thresholds")};
  std::vector<double> out;
  for (auto x : h) out.push_back(float_arg(x, "thresholds"));
  return out;
}

// Keras' `dtype` argument: metrics here compute in float32 with float64 running totals.
void expect_default_dtype(const char* metric, nb::handle dtype) {
  if (!dtype.is_none() && dtype_from_py(dtype) != ef::DType::float32)
    throw nb::value_error((std::string(metric) + ": only dtype=None or 'float32' is supported").c_str());
}


}  // namespace

void init_metrics(nb::module_& m) {
  nb::module_ t = nb::borrow<nb::module_>(m.attr("_train"));

  // ---------------------------------------------------------------- sample_weight overloads
  nb::handle loss = nb::type<Loss>();
  nb::cpp_function_def(
      [](const Loss& l, nb::handle y_true, nb::handle y_pred, nb::handle sample_weight) {
        return l(to_tensor(y_true), to_tensor(y_pred), optional_tensor(sample_weight));
      },
      nb::scope(loss), nb::name("__call__"), nb::is_method(),
      "y_true"_a, "y_pred"_a, "sample_weight"_a = nb::none(),
      "sum(per-example loss * sample_weight) / batch size (Keras' sum_over_batch_size)");
  nb::cpp_function_def(
      [](const Loss& l, nb::handle y_true, nb::handle y_pred) { return l.per_example(to_tensor(y_true), to_tensor(y_pred)); },
      nb::scope(loss), nb::name("per_example"), nb::is_method(), "y_true"_a, "y_pred"_a,
      "The loss of each example ([batch]), before the batch reduction");

  nb::handle metric = nb::type<Metric>();
  nb::cpp_function_def(
      [](Metric& self, nb::handle y_true, nb::handle y_pred, nb::handle sample_weight) {
        // A metric written in Python that reached the base method (no override, or super()):
        // calling the C++ virtual would come back to Python.
        nb::handle py = nb::find(&self);
        if (py.is_valid() && nb::type_info(nb::handle(Py_TYPE(py.ptr()))) == typeid(Metric))
          throw nb::type_error(("metric '" + self.name() + "': a subclass of Metric implements "
                                "update_state(y_true, y_pred, sample_weight=None)").c_str());
        self.update_state(to_tensor(y_true), to_tensor(y_pred), optional_tensor(sample_weight));
      },
      nb::scope(metric), nb::name("update_state"), nb::is_method(), "y_true"_a, "y_pred"_a, "sample_weight"_a = nb::none());
  nb::handle mean = nb::type<Mean>();
  nb::cpp_function_def(
      [](Mean& self, nb::handle values, nb::handle sample_weight) {
        self.update_state(Tensor(), to_tensor(values), optional_tensor(sample_weight));
      },
      nb::scope(mean), nb::name("update_state"), nb::is_method(),
      "values"_a, "sample_weight"_a = nb::none());

  // ---------------------------------------------------------------- regression
  // The losses hold the plain names in _train; keras.metrics exports these under them.
  nb::class_<metrics::MeanAbsoluteError, Metric>(t, "MeanAbsoluteErrorMetric")
      .def("__init__",
           [](metrics::MeanAbsoluteError* self, const std::string& name, nb::handle dtype) {
             expect_default_dtype("MeanAbsoluteError", dtype);
             new (self) metrics::MeanAbsoluteError(name);
           },
           "name"_a = "mean_absolute_error", "dtype"_a = nb::none());
  nb::class_<metrics::MeanSquaredError, Metric>(t, "MeanSquaredErrorMetric")
      .def("__init__",
           [](metrics::MeanSquaredError* self, const std::string& name, nb::handle dtype) {
             expect_default_dtype("MeanSquaredError", dtype);
             new (self) metrics::MeanSquaredError(name);
           },
           "name"_a = "mean_squared_error", "dtype"_a = nb::none());
  nb::class_<RootMeanSquaredError, Metric>(t, "RootMeanSquaredError")
      .def("__init__",
           [](RootMeanSquaredError* self, const std::string& name, nb::handle dtype) {
             expect_default_dtype("RootMeanSquaredError", dtype);
             new (self) RootMeanSquaredError(name);
           },
           "name"_a = "root_mean_squared_error", "dtype"_a = nb::none());

  // ---------------------------------------------------------------- top k
  nb::class_<TopKCategoricalAccuracy, Metric>(t, "TopKCategoricalAccuracy")
      .def("__init__",
           [](TopKCategoricalAccuracy* self, int k, const std::string& name, nb::handle dtype) {
             expect_default_dtype("TopKCategoricalAccuracy", dtype);
             new (self) TopKCategoricalAccuracy(k, name);
           },
           "k"_a = 5, "name"_a = "top_k_categorical_accuracy", "dtype"_a = nb::none());
  nb::class_<SparseTopKCategoricalAccuracy, Metric>(t, "SparseTopKCategoricalAccuracy")
      .def("__init__",
           [](SparseTopKCategoricalAccuracy* self, int k, const std::string& name, nb::handle dtype, bool from_sorted_ids) {
             expect_default_dtype("SparseTopKCategoricalAccuracy", dtype);
             if (from_sorted_ids) throw nb::value_error("SparseTopKCategoricalAccuracy: from_sorted_ids=True is not supported");
             new (self) SparseTopKCategoricalAccuracy(k, name);
           },
           "k"_a = 5, "name"_a = "sparse_top_k_categorical_accuracy", "dtype"_a = nb::none(), "from_sorted_ids"_a = false);

  // ---------------------------------------------------------------- confusion metrics
  auto confusion = [](nb::handle thresholds, std::optional<int> top_k, std::optional<int> class_id) {
    return ConfusionOptions{thresholds_of(thresholds), top_k, class_id};
  };
  nb::class_<Precision, Metric>(t, "Precision")
      .def("__init__",
           [confusion](Precision* self, nb::handle thresholds, std::optional<int> top_k, std::optional<int> class_id,
                       std::optional<std::string> name, nb::handle dtype) {
             expect_default_dtype("Precision", dtype);
             new (self) Precision(confusion(thresholds, top_k, class_id), name.value_or("precision"));
           },
           "thresholds"_a = nb::none(), "top_k"_a = nb::none(), "class_id"_a = nb::none(), "name"_a = nb::none(),
           "dtype"_a = nb::none());
  nb::class_<Recall, Metric>(t, "Recall")
      .def("__init__",
           [confusion](Recall* self, nb::handle thresholds, std::optional<int> top_k, std::optional<int> class_id,
                       std::optional<std::string> name, nb::handle dtype) {
             expect_default_dtype("Recall", dtype);
             new (self) Recall(confusion(thresholds, top_k, class_id), name.value_or("recall"));
           },
           "thresholds"_a = nb::none(), "top_k"_a = nb::none(), "class_id"_a = nb::none(), "name"_a = nb::none(),
           "dtype"_a = nb::none());
  nb::class_<AUC, Metric>(t, "AUC")
      .def("__init__",
           [](AUC* self, int num_thresholds, const std::string& curve, const std::string& summation_method,
              std::optional<std::string> name, nb::handle dtype, nb::handle thresholds, bool multi_label,
              nb::handle num_labels, nb::handle label_weights, bool from_logits) {
             expect_default_dtype("AUC", dtype);
             if (summation_method != "interpolation")
               throw nb::value_error("AUC: only summation_method='interpolation' (Keras' default) is supported");
             if (multi_label || !num_labels.is_none() || !label_weights.is_none())
               throw nb::value_error("AUC: multi_label, num_labels and label_weights are not supported (data is flattened)");
             new (self) AUC(AUCOptions{num_thresholds, curve, thresholds_of(thresholds), from_logits}, name.value_or("auc"));
           },
           "num_thresholds"_a = 200, "curve"_a = "ROC", "summation_method"_a = "interpolation", "name"_a = nb::none(),
           "dtype"_a = nb::none(), "thresholds"_a = nb::none(), "multi_label"_a = false, "num_labels"_a = nb::none(),
           "label_weights"_a = nb::none(), "from_logits"_a = false)
      .def_prop_ro("thresholds", &AUC::thresholds);

  // ---------------------------------------------------------------- F1
  nb::class_<FBetaScore, Metric>(t, "FBetaScore")
      .def("__init__",
           [](FBetaScore* self, std::optional<std::string> average, double beta, std::optional<double> threshold,
              const std::string& name, nb::handle dtype) {
             expect_default_dtype("FBetaScore", dtype);
             new (self) FBetaScore(average.value_or(""), beta, threshold, name);
           },
           "average"_a = nb::none(), "beta"_a = 1.0, "threshold"_a = nb::none(), "name"_a = "fbeta_score",
           "dtype"_a = nb::none())
      .def_prop_ro("beta", &FBetaScore::beta);
  nb::class_<F1Score, FBetaScore>(t, "F1Score")
      .def("__init__",
           [](F1Score* self, std::optional<std::string> average, std::optional<double> threshold, const std::string& name,
              nb::handle dtype) {
             expect_default_dtype("F1Score", dtype);
             new (self) F1Score(average.value_or(""), threshold, name);
           },
           "average"_a = nb::none(), "threshold"_a = nb::none(), "name"_a = "f1_score", "dtype"_a = nb::none());
}

}  // namespace efpy
