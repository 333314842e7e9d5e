#pragma once
// The print op, for saving and loading graphs: made from its pieces, and its pieces read back.
#include <memory>
#include <vector>

#include "eagerflow/ops/primitive.h"
#include "eagerflow/ops/print.h"

namespace ef {
std::shared_ptr<Primitive> make_print(std::vector<detail::PrintPiece> pieces);
// The pieces of a print op; nullptr for any other op.
const std::vector<detail::PrintPiece>* print_pieces(const Primitive& op);
}  // namespace ef
