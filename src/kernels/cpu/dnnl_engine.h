#pragma once
// The one oneDNN CPU engine all kernels use (its creation also bounds oneDNN's own primitive
// cache), and execution through the C API with an argument array prepared once: the C++
// wrapper's std::unordered_map of arguments would allocate on every call.
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

namespace ef::cpu {

dnnl::engine& dnnl_engine();
// Runs `primitive` on this thread's stream with `args` (data handles set by the caller).
void dnnl_execute(const dnnl::primitive& primitive, const std::vector<dnnl_exec_arg_t>& args, const char* op);
void dnnl_wait();

}  // namespace ef::cpu
