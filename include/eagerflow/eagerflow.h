#pragma once
// Everything a user needs: #include <eagerflow/eagerflow.h>
#include "eagerflow/core/allocator.h"
#include "eagerflow/core/dtype.h"
#include "eagerflow/core/error.h"
#include "eagerflow/core/shape.h"
#include "eagerflow/core/tensor.h"
#include "eagerflow/core/threading.h"
#include "eagerflow/ops/ops.h"
#include "eagerflow/ops/random.h"
