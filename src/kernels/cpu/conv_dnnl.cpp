#include <atomic>
#include <map>
#include <optional>
#include <string_view>
#include <cstdlib>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "eagerflow/core/error.h"
#include "kernels/cpu/conv.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/dnnl_engine.h"

namespace ef::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

dnnl::engine& engine() { return dnnl_engine(); }

std::atomic<std::uint64_t> generation{0};

// A per-thread cache of prepared primitives, bounded: cleared when it grows past 64 entries
// or when release_cached() bumped the generation.
template <class Key, class Value>
struct BoundedCache {
  std::map<Key, Value> map;
  std::uint64_t seen = 0;
  template <class Make>
  Value& get(const Key& key, Make&& make) {
    if (seen != generation.load(std::memory_order_relaxed) || map.size() >= 64) {
      map.clear();
      seen = generation.load();
    }
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(key, make()).first;
    return it->second;
  }
};

using ConvKey = std::tuple<int, std::array<std::int64_t, 19>, int>;  // which pass, geometry, threads

std::array<std::int64_t, 19> key_of(const ConvGeometry& g) {
  return {g.n,  g.h,  g.w,  g.c,  g.kh, g.kw, g.f, g.oh, g.ow, g.sh, g.sw, g.dh, g.dw, g.pt, g.pl, g.pb, g.pr,
          g.bf16 ? 1 : 0, g.relu ? 1 : 0};
}

dt data_type_of(const ConvGeometry& g) { return g.bf16 ? dt::bf16 : dt::f32; }

struct ConvMemories {
  dnnl::memory::desc src, weights, dst;
  dims strides, dilates, pad_l, pad_r;
};

ConvMemories conv_mds(const ConvGeometry& g) {
  dt t = data_type_of(g);
  return {dnnl::memory::desc({g.n, g.c, g.h, g.w}, t, tag::nhwc),
          dnnl::memory::desc({g.f, g.c, g.kh, g.kw}, t, tag::hwio),
          dnnl::memory::desc({g.n, g.f, g.oh, g.ow}, t, tag::nhwc),
          {g.sh, g.sw},
          {g.dh - 1, g.dw - 1},  // oneDNN counts dilation from 0
          {g.pt, g.pl},
          {g.pb, g.pr}};
}

// Which layout each convolution pass computes its activations in: plain NHWC (the user's
// tensors, no reorders) or the primitive's own blocked layouts ("any"), each activation
// reordered from or to the user's tensor. Weights always take the primitive's layout (a
// reorder of a few KB). Both are jit:avx2 kernels on this oneDNN; blocked ones pay a reorder
// of every activation in and out (measured in bench/RESULTS.md, issue 21).
dnnl::memory::desc in_layout(const dnnl::memory::desc& d, bool plain) {
  return plain ? d : dnnl::memory::desc(d.dims(), d.data_type(), tag::any);
}
bool plain_layout(int pass, const ConvGeometry& g);

dnnl::convolution_forward::primitive_desc forward_pd(const ConvGeometry& g, bool plain, bool bias) {
  ConvMemories m = conv_mds(g);
  dnnl::memory::desc b = bias ? dnnl::memory::desc({g.f}, data_type_of(g), tag::a) : dnnl::memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                    in_layout(m.src, plain), in_layout(m.weights, false), b, in_layout(m.dst, plain),
                                    m.strides, m.dilates, m.pad_l, m.pad_r);
  dnnl::primitive_attr attr;
  if (g.relu) {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return dnnl::convolution_forward::primitive_desc(d, attr, engine());
}

// One argument of a prepared primitive: the user's plain memory, and the primitive's own
// layout with the reorder between them when the layouts differ. Argument arrays are built
// once (memory objects are handles: only the data pointer changes between calls).
struct Argument {
  bool input;
  dnnl::memory user, internal;
  std::optional<dnnl::reorder> reorder;
  std::vector<dnnl_exec_arg_t> reorder_args;
};

struct Prepared {
  dnnl::primitive primitive;
  std::vector<Argument> args;  // inputs, then outputs, in the order run() takes their data
  std::vector<dnnl_exec_arg_t> exec_args;
};

Argument make_argument(bool input, const dnnl::memory::desc& user, const dnnl::memory::desc& chosen) {
  void* none = DNNL_MEMORY_NONE;
  Argument a{input, dnnl::memory(user, engine(), none), {}, std::nullopt, {}};
  if (chosen != user) {
    a.internal = dnnl::memory(chosen, engine());
    const dnnl::memory& from = input ? a.user : a.internal;
    const dnnl::memory& to = input ? a.internal : a.user;
    a.reorder = dnnl::reorder(from, to);
    a.reorder_args = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
  }
  return a;
}

Prepared prepared(dnnl::primitive primitive, std::vector<std::pair<int, Argument>> args) {
  Prepared p{std::move(primitive), {}, {}};
  for (auto& [tag, a] : args) {
    p.exec_args.push_back({tag, (a.reorder ? a.internal : a.user).get()});
    p.args.push_back(std::move(a));
  }
  return p;
}

void run(Prepared& p, std::initializer_list<const void*> data) {
  const void* const* d = data.begin();
  for (std::size_t i = 0; i < p.args.size(); ++i) {
    Argument& arg = p.args[i];
    arg.user.set_data_handle(const_cast<void*>(d[i]));
    if (arg.reorder && arg.input) dnnl_execute(*arg.reorder, arg.reorder_args, "conv2d");
  }
  dnnl_execute(p.primitive, p.exec_args, "conv2d");
  for (auto& arg : p.args)
    if (arg.reorder && !arg.input) dnnl_execute(*arg.reorder, arg.reorder_args, "conv2d");
  dnnl_wait();
}

enum Pass { kForward, kBackwardData, kBackwardWeights, kForwardBias, kBackwardWeightsBias };

// The first implementation oneDNN offers for `pd` that is not an AMX kernel, where it has one.
template <typename PrimitiveDesc>
void skip_amx(PrimitiveDesc& pd) {
  PrimitiveDesc first = pd;
  do {
    if (std::string_view(pd.impl_info_str()).find("amx") == std::string_view::npos) return;
  } while (pd.next_impl());
  pd = first;
}

Prepared& conv_prepared(Pass pass, const ConvGeometry& g) {
  thread_local BoundedCache<ConvKey, Prepared> cache;
  int threads = threads_for_work(work_of({g.n, g.oh, g.ow, g.f, g.kh, g.kw, g.c}), kGemmParallelGrain);
  detail::sync_omp_threads(threads);
  return cache.get({pass, key_of(g), threads}, [&]() -> Prepared {
    ConvMemories m = conv_mds(g);
    bool plain = plain_layout(pass, g);
    dnnl::memory::desc bias({g.f}, data_type_of(g), tag::a);
    if (pass == kForward || pass == kForwardBias) {
      auto fwd = forward_pd(g, plain, pass == kForwardBias);
      std::vector<std::pair<int, Argument>> args{{DNNL_ARG_SRC, make_argument(true, m.src, fwd.src_desc())},
                                                 {DNNL_ARG_WEIGHTS, make_argument(true, m.weights, fwd.weights_desc())}};
      if (pass == kForwardBias) args.push_back({DNNL_ARG_BIAS, make_argument(true, bias, fwd.bias_desc())});
      args.push_back({DNNL_ARG_DST, make_argument(false, m.dst, fwd.dst_desc())});
      return prepared(dnnl::convolution_forward(fwd), std::move(args));
    }
    auto fwd = forward_pd(g, plain, pass == kBackwardWeightsBias);
    if (pass == kBackwardData) {
      dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, in_layout(m.src, plain),
                                              in_layout(m.weights, false), in_layout(m.dst, plain), m.strides, m.dilates,
                                              m.pad_l, m.pad_r);
      dnnl::convolution_backward_data::primitive_desc pd(d, engine(), fwd);
      return prepared(dnnl::convolution_backward_data(pd),
                      {{DNNL_ARG_DIFF_DST, make_argument(true, m.dst, pd.diff_dst_desc())},
                       {DNNL_ARG_WEIGHTS, make_argument(true, m.weights, pd.weights_desc())},
                       {DNNL_ARG_DIFF_SRC, make_argument(false, m.src, pd.diff_src_desc())}});
    }
    bool with_bias = pass == kBackwardWeightsBias;
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, in_layout(m.src, plain),
                                               in_layout(m.weights, false), with_bias ? bias : dnnl::memory::desc(),
                                               in_layout(m.dst, plain), m.strides, m.dilates, m.pad_l, m.pad_r);
    dnnl::convolution_backward_weights::primitive_desc pd(d, engine(), fwd);
    // bfloat16 filter gradients of a layer with fewer than 8 input channels (an image's first
    // convolution): oneDNN's AMX kernel ran 128x28x28x1 -> 16 filters in 0.57-0.65 ms at 2
    // threads, its AVX512_BF16 kernel in 0.31 (with 16 channels AMX is the faster: 0.36 against
    // 0.95). Both accumulate in float32 and round once.
    if (g.bf16 && g.c < 8) skip_amx(pd);
    std::vector<std::pair<int, Argument>> args{
        {DNNL_ARG_SRC, make_argument(true, m.src, pd.src_desc())},
        {DNNL_ARG_DIFF_DST, make_argument(true, m.dst, pd.diff_dst_desc())},
        {DNNL_ARG_DIFF_WEIGHTS, make_argument(false, m.weights, pd.diff_weights_desc())}};
    if (with_bias) args.push_back({DNNL_ARG_DIFF_BIAS, make_argument(false, bias, pd.diff_bias_desc())});
    return prepared(dnnl::convolution_backward_weights(pd), std::move(args));
  });
}

bool plain_layout(int pass, const ConvGeometry& g) {
  if (g.bf16) return false;  // the bfloat16 (AMX) kernels want their own blocked layouts
  static const char* forced = std::getenv("EF_CONV_LAYOUT");  // "plain" or "blocked": for measuring
  if (forced && std::string_view(forced) == "plain") return true;
  if (forced && std::string_view(forced) == "blocked") return false;
  // Measured on this oneDNN (2.6, jit:avx2) for the CNN of issue 21: the forward and the data
  // gradient run as fast on NHWC as on blocked layouts, so the reorders around them are pure
  // cost; the filter gradient is faster blocked (with its reorders) once there are 8 or more
  // input channels, and 3x slower blocked for the first layer's 1 channel.
  return pass != kBackwardWeights && pass != kBackwardWeightsBias ? true : g.c < 8;
}

// ---------------------------------------------------------------- pooling
using PoolKey = std::tuple<int, std::array<std::int64_t, 14>, int, int>;

struct PoolPrepared {
  dnnl::pooling_forward forward;
  dnnl::pooling_backward backward;
  dnnl::memory src, dst, workspace, diff_src, diff_dst;
  dnnl::memory scratch_dst;  // max pooling's backward re-runs the forward into it
  bool has_workspace;
  std::vector<dnnl_exec_arg_t> forward_args, recompute_args, backward_args;
};

PoolPrepared& pool_prepared(const PoolGeometry& g, bool with_backward) {
  thread_local BoundedCache<PoolKey, PoolPrepared> cache;
  int threads = threads_for_work(work_of({g.n, g.oh, g.ow, g.c, g.kh, g.kw}), kParallelGrain);
  detail::sync_omp_threads(threads);
  std::array<std::int64_t, 14> k{g.n, g.h, g.w, g.c, g.kh, g.kw, g.oh, g.ow, g.sh, g.sw, g.pt, g.pl, g.pb, g.pr};
  return cache.get({static_cast<int>(g.kind) * 2 + g.bf16, k, threads, with_backward}, [&]() -> PoolPrepared {
    const dt type = g.bf16 ? dt::bf16 : dt::f32;
    dnnl::memory::desc src({g.n, g.c, g.h, g.w}, type, tag::nhwc), dst({g.n, g.c, g.oh, g.ow}, type, tag::nhwc);
    // Keras' "same" average pooling divides by the window's real elements, not the padding.
    auto algo = g.kind == PoolKind::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
    dims strides{g.sh, g.sw}, kernel{g.kh, g.kw}, pad_l{g.pt, g.pl}, pad_r{g.pb, g.pr};
    dnnl::pooling_forward::desc fd(with_backward ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
                                   algo, src, dst, strides, kernel, pad_l, pad_r);
    dnnl::pooling_forward::primitive_desc fpd(fd, engine());
    void* none = DNNL_MEMORY_NONE;
    PoolPrepared p{dnnl::pooling_forward(fpd), {}, dnnl::memory(src, engine(), none), dnnl::memory(dst, engine(), none),
                   {}, dnnl::memory(src, engine(), none), dnnl::memory(dst, engine(), none), {}, false, {}, {}, {}};
    p.forward_args = {{DNNL_ARG_SRC, p.src.get()}, {DNNL_ARG_DST, p.dst.get()}};
    if (with_backward) {
      p.has_workspace = fpd.workspace_desc().get_size() > 0;
      dnnl::pooling_backward::desc bd(algo, src, dst, strides, kernel, pad_l, pad_r);
      p.backward = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(bd, engine(), fpd));
      p.backward_args = {{DNNL_ARG_DIFF_DST, p.diff_dst.get()}, {DNNL_ARG_DIFF_SRC, p.diff_src.get()}};
      if (p.has_workspace) {
        p.workspace = dnnl::memory(fpd.workspace_desc(), engine());
        p.scratch_dst = dnnl::memory(dst, engine());
        p.recompute_args = {{DNNL_ARG_SRC, p.src.get()}, {DNNL_ARG_DST, p.scratch_dst.get()},
                            {DNNL_ARG_WORKSPACE, p.workspace.get()}};
        p.backward_args.push_back({DNNL_ARG_WORKSPACE, p.workspace.get()});
      }
    }
    return p;
  });
}

}  // namespace

void conv2d_forward(const ConvGeometry& g, const void* x, const void* w, const void* bias, void* y) {
  if (bias) run(conv_prepared(kForwardBias, g), {x, w, bias, y});
  else run(conv_prepared(kForward, g), {x, w, y});
}
void conv2d_backward_data(const ConvGeometry& g, const void* dy, const void* w, void* dx) {
  run(conv_prepared(kBackwardData, g), {dy, w, dx});
}
void conv2d_backward_weights(const ConvGeometry& g, const void* x, const void* dy, void* dw, void* dbias) {
  if (dbias) run(conv_prepared(kBackwardWeightsBias, g), {x, dy, dw, dbias});
  else run(conv_prepared(kBackwardWeights, g), {x, dy, dw});
}

void pool2d_forward(const PoolGeometry& g, const void* x, void* y) {
  PoolPrepared& p = pool_prepared(g, false);
  p.src.set_data_handle(const_cast<void*>(x));
  p.dst.set_data_handle(y);
  dnnl_execute(p.forward, p.forward_args, "pool2d");
  dnnl_wait();
}

void pool2d_backward(const PoolGeometry& g, const float* x, const float* dy, float* dx) {
  if (g.kind == PoolKind::max) return max_pool2d_backward(g, x, dy, dx);
  PoolPrepared& p = pool_prepared(g, true);
  p.src.set_data_handle(const_cast<float*>(x));
  // Max pooling: run the forward pass again for the workspace that records the maxima.
  if (p.has_workspace) dnnl_execute(p.forward, p.recompute_args, "max_pool2d_grad");
  p.diff_dst.set_data_handle(const_cast<float*>(dy));
  p.diff_src.set_data_handle(dx);
  dnnl_execute(p.backward, p.backward_args, "pool2d_grad");
  dnnl_wait();
}

void release_conv_caches() { generation.fetch_add(1); }

}  // namespace ef::cpu
