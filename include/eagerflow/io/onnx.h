#pragma once
// Moved: model export lives in eagerflow/saving/ (eagerflow/io/ holds file formats). This
// forwarding header keeps the old include working.
#include "eagerflow/saving/onnx.h"
