#pragma once
// Shared by the metrics (src/train/metrics*.cpp): label/prediction alignment and Keras'
// sample_weight rules.
#include <string>
#include <utility>
#include <vector>

#include "eagerflow/core/tensor.h"

namespace ef::train {

// Labels and predictions of one shape after Keras' rank alignment; anything else would
// broadcast into a wrong number (an ef::Error naming the metric and both shapes).
std::pair<Tensor, Tensor> matched(const std::string& metric, const Tensor& y_true, const Tensor& y_pred);

// Class indices [batch...] for predictions [batch..., classes], checked against the class
// count by an op (ef::class_indices), so a traced step checks every batch.
Tensor labels_as_indices(const std::string& metric, const Tensor& y_true, const Tensor& y_pred);

// Keras' Mean update: {sum of per-example values times weights, sum of weights} in float64.
// values [batch, ...] are averaged over the axes the weight lacks and then per example;
// without a weight every example weighs 1.
std::pair<Tensor, Tensor> samplewise_totals(const std::string& metric, const Tensor& values, const Tensor& sample_weight);

// A weight per element of `like` (float64, like's shape), as Keras' confusion metrics: a
// [batch] weight covers each example's row; undefined: ones.
Tensor element_weights(const std::string& metric, const Tensor& sample_weight, const Tensor& y_true, const Tensor& like);

// Predictions as floats: integer or boolean ones (Keras converts them) become float32.
Tensor as_float(const Tensor& x);

// a / b, 0 where b is 0 (Keras' divide_no_nan).
Tensor divide_no_nan(const Tensor& a, const Tensor& b);

// The axes from `first` to rank - 1.
std::vector<int> axes_from(int first, int rank);

}  // namespace ef::train
