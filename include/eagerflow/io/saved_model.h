#pragma once
// Moved: model saving lives in eagerflow/saving/ (eagerflow/io/ holds file formats). This
// forwarding header keeps the old include working.
#include "eagerflow/saving/saved_model.h"
