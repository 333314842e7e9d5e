#pragma once
// Softmax cross-entropy from logits as one fused op (TF's
// tf.nn.sparse_softmax_cross_entropy_with_logits): what SparseCategoricalCrossentropy(from_logits)
// runs on.
#include "eagerflow/core/tensor.h"

namespace ef::nn {

// Per row: logsumexp(logits) - logits[label], over logits' last axis (C classes). labels:
// int32/int64 class indices of logits' shape without the last axis, each in [0, C) (else an
// ef::Error naming the label); logits float32/float64. The result has the labels' shape. Its
// gradient is (softmax(logits) - one_hot(label)) times the incoming one, in one pass.
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);

}  // namespace ef::nn
