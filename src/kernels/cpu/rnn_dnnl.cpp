// LSTM / GRU on oneDNN's RNN primitives (src/kernels/cpu/rnn.h).
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <tuple>
#include <vector>

#include "eagerflow/core/error.h"
#include "kernels/cpu/dnnl_engine.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/rnn.h"

namespace ef::cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using md = dnnl::memory::desc;

struct Descs {
  md src_layer, src_iter, src_iter_c, weights_layer, weights_iter, bias, dst_layer, dst_iter, dst_iter_c;
  md user_weights_layer, user_weights_iter;
};

Descs descs(const RnnGeometry& g) {
  bool lstm = g.cell == RnnCell::lstm;
  md iter({1, 1, g.n, g.u}, dt::f32, tag::ldnc);
  Descs d;
  d.src_layer = md({g.t, g.n, g.c}, dt::f32, tag::ntc);
  d.src_iter = iter;
  d.src_iter_c = lstm ? iter : md();
  d.weights_layer = md({1, 1, g.c, g.gates(), g.u}, dt::f32, tag::any);
  d.weights_iter = md({1, 1, g.u, g.gates(), g.u}, dt::f32, tag::any);
  d.user_weights_layer = md({1, 1, g.c, g.gates(), g.u}, dt::f32, tag::ldigo);
  d.user_weights_iter = md({1, 1, g.u, g.gates(), g.u}, dt::f32, tag::ldigo);
  d.bias = md({1, 1, lstm ? 4 : 4, g.u}, dt::f32, tag::ldgo);
  d.dst_layer = md({g.t, g.n, g.u}, dt::f32, tag::ntc);
  d.dst_iter = iter;
  d.dst_iter_c = lstm ? iter : md();
  return d;
}

dnnl::rnn_direction direction(const RnnGeometry& g) {
  return g.reverse ? dnnl::rnn_direction::unidirectional_right2left : dnnl::rnn_direction::unidirectional_left2right;
}

// A weight argument in the primitive's own layout, filled from the user's ldigo buffer by a
// reorder (or read in place when the layouts agree).
struct Weight {
  dnnl::memory user, internal;
  std::optional<dnnl::reorder> reorder;
  std::vector<dnnl_exec_arg_t> args;
  bool to_user = false;
  void init(const md& user_md, const md& chosen, bool output) {
    void* none = DNNL_MEMORY_NONE;
    user = dnnl::memory(user_md, dnnl_engine(), none);
    to_user = output;
    if (chosen != user_md) {
      internal = dnnl::memory(chosen, dnnl_engine());
      const dnnl::memory& from = output ? internal : user;
      const dnnl::memory& to = output ? user : internal;
      reorder = dnnl::reorder(from, to);
      args = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}};
    }
  }
  dnnl_memory_t arg() const { return (reorder ? internal : user).get(); }
  void set(const void* p) { user.set_data_handle(const_cast<void*>(p)); }
  void before(const char* op) {
    if (reorder && !to_user) dnnl_execute(*reorder, args, op);
  }
  void zero() {  // oneDNN accumulates weight gradients into their buffer
    const dnnl::memory& m = reorder ? internal : user;
    std::memset(m.get_data_handle(), 0, m.get_desc().get_size());
  }
  void after(const char* op) {
    if (reorder && to_user) dnnl_execute(*reorder, args, op);
  }
};

struct Forward {
  dnnl::primitive primitive;
  std::size_t workspace_bytes = 0;
  Weight w, r;
  dnnl::memory x, h0, c0, b, y, ht, ct, ws;
  std::vector<dnnl_exec_arg_t> args;
};

struct Backward {
  dnnl::primitive primitive;
  Weight w, r, dw, dr;
  dnnl::memory x, h0, c0, b, y, ht, ct, ws, dy, dht, dct, dx, dh0, dc0, db;
  std::vector<dnnl_exec_arg_t> args;
};

struct Prepared {
  std::optional<dnnl::lstm_forward::primitive_desc> lstm_pd;
  std::optional<dnnl::lbr_gru_forward::primitive_desc> gru_pd;
  const dnnl::rnn_primitive_desc_base& fwd() const {
    if (lstm_pd) return *lstm_pd;
    return *gru_pd;
  }
  std::optional<Forward> forward;
  std::optional<Backward> backward;
};

using Key = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, int>;

dnnl::memory handle(const md& d) {
  void* none = DNNL_MEMORY_NONE;
  return dnnl::memory(d, dnnl_engine(), none);
}

void make_forward_pd(const RnnGeometry& g, Prepared& p) {
  Descs d = descs(g);
  auto prop = dnnl::prop_kind::forward_training;
  if (g.cell == RnnCell::lstm) {
    dnnl::lstm_forward::desc desc(prop, direction(g), d.src_layer, d.src_iter, d.src_iter_c, d.weights_layer,
                                  d.weights_iter, d.bias, d.dst_layer, d.dst_iter, d.dst_iter_c);
    p.lstm_pd.emplace(desc, dnnl_engine());
    return;
  }
  dnnl::lbr_gru_forward::desc desc(prop, direction(g), d.src_layer, d.src_iter, d.weights_layer, d.weights_iter, d.bias,
                                   d.dst_layer, d.dst_iter);
  p.gru_pd.emplace(desc, dnnl_engine());
}

Prepared& prepared(const RnnGeometry& g) {
  thread_local std::map<Key, Prepared> cache;
  int threads = threads_for_work(work_of({g.n, g.u, g.gates(), g.c + g.u}), kGemmParallelGrain);
  detail::sync_omp_threads(threads);
  Key key{static_cast<int>(g.cell), g.t, g.n, g.c, g.u, g.reverse, threads};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 16) cache.clear();
  Prepared p;
  make_forward_pd(g, p);
  return cache.emplace(key, std::move(p)).first->second;
}

Forward& forward_of(const RnnGeometry& g) {
  Prepared& p = prepared(g);
  if (p.forward) return *p.forward;
  Descs d = descs(g);
  const dnnl::rnn_primitive_desc_base& pd = p.fwd();
  Forward f;
  f.primitive = p.lstm_pd ? dnnl::primitive(dnnl::lstm_forward(*p.lstm_pd)) : dnnl::primitive(dnnl::lbr_gru_forward(*p.gru_pd));
  f.workspace_bytes = pd.workspace_desc().get_size();
  f.w.init(d.user_weights_layer, pd.weights_layer_desc(), false);
  f.r.init(d.user_weights_iter, pd.weights_iter_desc(), false);
  f.x = handle(d.src_layer);
  f.h0 = handle(d.src_iter);
  f.b = handle(d.bias);
  f.y = handle(d.dst_layer);
  f.ht = handle(d.dst_iter);
  f.ws = handle(pd.workspace_desc());
  f.args = {{DNNL_ARG_SRC_LAYER, f.x.get()},       {DNNL_ARG_SRC_ITER, f.h0.get()},
            {DNNL_ARG_WEIGHTS_LAYER, f.w.arg()},  {DNNL_ARG_WEIGHTS_ITER, f.r.arg()},
            {DNNL_ARG_BIAS, f.b.get()},           {DNNL_ARG_DST_LAYER, f.y.get()},
            {DNNL_ARG_DST_ITER, f.ht.get()},      {DNNL_ARG_WORKSPACE, f.ws.get()}};
  if (g.cell == RnnCell::lstm) {
    f.c0 = handle(d.src_iter_c);
    f.ct = handle(d.dst_iter_c);
    f.args.push_back({DNNL_ARG_SRC_ITER_C, f.c0.get()});
    f.args.push_back({DNNL_ARG_DST_ITER_C, f.ct.get()});
  }
  p.forward = std::move(f);
  return *p.forward;
}

Backward& backward_of(const RnnGeometry& g) {
  Prepared& p = prepared(g);
  if (p.backward) return *p.backward;
  Descs d = descs(g);
  md any_w = d.weights_layer, any_r = d.weights_iter;
  std::optional<dnnl::lstm_backward::primitive_desc> lstm_pd;
  std::optional<dnnl::lbr_gru_backward::primitive_desc> gru_pd;
  Backward b;
  if (g.cell == RnnCell::lstm) {
    dnnl::lstm_backward::desc desc(dnnl::prop_kind::backward, direction(g), d.src_layer, d.src_iter, d.src_iter_c, any_w,
                                   any_r, d.bias, d.dst_layer, d.dst_iter, d.dst_iter_c, d.src_layer, d.src_iter,
                                   d.src_iter_c, any_w, any_r, d.bias, d.dst_layer, d.dst_iter, d.dst_iter_c);
    lstm_pd.emplace(desc, dnnl_engine(), *p.lstm_pd);
    b.primitive = dnnl::lstm_backward(*lstm_pd);
  } else {
    dnnl::lbr_gru_backward::desc desc(dnnl::prop_kind::backward, direction(g), d.src_layer, d.src_iter, any_w, any_r,
                                      d.bias, d.dst_layer, d.dst_iter, d.src_layer, d.src_iter, any_w, any_r, d.bias,
                                      d.dst_layer, d.dst_iter);
    gru_pd.emplace(desc, dnnl_engine(), *p.gru_pd);
    b.primitive = dnnl::lbr_gru_backward(*gru_pd);
  }
  const dnnl::rnn_primitive_desc_base& pd = lstm_pd ? static_cast<const dnnl::rnn_primitive_desc_base&>(*lstm_pd) : *gru_pd;
  b.w.init(d.user_weights_layer, pd.weights_layer_desc(), false);
  b.r.init(d.user_weights_iter, pd.weights_iter_desc(), false);
  b.dw.init(d.user_weights_layer, pd.diff_weights_layer_desc(), true);
  b.dr.init(d.user_weights_iter, pd.diff_weights_iter_desc(), true);
  b.x = handle(d.src_layer);
  b.h0 = handle(d.src_iter);
  b.b = handle(d.bias);
  b.y = handle(d.dst_layer);
  b.ht = handle(d.dst_iter);
  b.ws = handle(p.fwd().workspace_desc());
  b.dy = handle(d.dst_layer);
  b.dht = handle(d.dst_iter);
  b.dx = handle(d.src_layer);
  b.dh0 = handle(d.src_iter);
  b.db = handle(d.bias);
  b.args = {{DNNL_ARG_SRC_LAYER, b.x.get()},          {DNNL_ARG_SRC_ITER, b.h0.get()},
            {DNNL_ARG_WEIGHTS_LAYER, b.w.arg()},     {DNNL_ARG_WEIGHTS_ITER, b.r.arg()},
            {DNNL_ARG_BIAS, b.b.get()},              {DNNL_ARG_DST_LAYER, b.y.get()},
            {DNNL_ARG_DST_ITER, b.ht.get()},         {DNNL_ARG_WORKSPACE, b.ws.get()},
            {DNNL_ARG_DIFF_DST_LAYER, b.dy.get()},   {DNNL_ARG_DIFF_DST_ITER, b.dht.get()},
            {DNNL_ARG_DIFF_SRC_LAYER, b.dx.get()},   {DNNL_ARG_DIFF_SRC_ITER, b.dh0.get()},
            {DNNL_ARG_DIFF_WEIGHTS_LAYER, b.dw.arg()}, {DNNL_ARG_DIFF_WEIGHTS_ITER, b.dr.arg()},
            {DNNL_ARG_DIFF_BIAS, b.db.get()}};
  if (g.cell == RnnCell::lstm) {
    b.c0 = handle(d.src_iter_c);
    b.ct = handle(d.dst_iter_c);
    b.dct = handle(d.dst_iter_c);
    b.dc0 = handle(d.src_iter_c);
    b.args.push_back({DNNL_ARG_SRC_ITER_C, b.c0.get()});
    b.args.push_back({DNNL_ARG_DST_ITER_C, b.ct.get()});
    b.args.push_back({DNNL_ARG_DIFF_DST_ITER_C, b.dct.get()});
    b.args.push_back({DNNL_ARG_DIFF_SRC_ITER_C, b.dc0.get()});
  }
  p.backward = std::move(b);
  return *p.backward;
}

void set(dnnl::memory& m, const void* p) { m.set_data_handle(const_cast<void*>(p)); }

const char* op_name(const RnnGeometry& g) { return g.cell == RnnCell::lstm ? "lstm" : "gru"; }

}  // namespace

std::size_t rnn_workspace_bytes(const RnnGeometry& g) {
  try {
    return prepared(g).fwd().workspace_desc().get_size();
  } catch (const dnnl::error& e) {
    fail(ErrorCode::unimplemented, op_name(g), std::string("oneDNN cannot run this RNN: ") + e.what());
  }
}

void rnn_forward(const RnnGeometry& g, const float* x, const float* h0, const float* c0, const float* w, const float* r,
                 const float* b, float* y, float* h_t, float* c_t, void* ws) {
  Forward& f = forward_of(g);
  const char* op = op_name(g);
  f.w.set(w);
  f.r.set(r);
  f.w.before(op);
  f.r.before(op);
  set(f.x, x);
  set(f.h0, h0);
  set(f.b, b);
  set(f.y, y);
  set(f.ht, h_t);
  set(f.ws, ws);
  if (g.cell == RnnCell::lstm) {
    set(f.c0, c0);
    set(f.ct, c_t);
  }
  dnnl_execute(f.primitive, f.args, op);
  dnnl_wait();
}

void rnn_backward(const RnnGeometry& g, const float* x, const float* h0, const float* c0, const float* w, const float* r,
                  const float* b, const float* y, const float* h_t, const float* c_t, const void* ws, const float* dy,
                  const float* dh_t, const float* dc_t, float* dx, float* dh0, float* dc0, float* dw, float* dr, float* db) {
  Backward& k = backward_of(g);
  const char* op = op_name(g);
  k.w.set(w);
  k.r.set(r);
  k.w.before(op);
  k.r.before(op);
  k.dw.set(dw);
  k.dr.set(dr);
  k.dw.zero();
  k.dr.zero();
  std::memset(db, 0, sizeof(float) * static_cast<std::size_t>(g.bias_rows() * g.u));
  set(k.x, x);
  set(k.h0, h0);
  set(k.b, b);
  set(k.y, y);
  set(k.ht, h_t);
  set(k.ws, ws);
  set(k.dy, dy);
  set(k.dht, dh_t);
  set(k.dx, dx);
  set(k.dh0, dh0);
  set(k.db, db);
  if (g.cell == RnnCell::lstm) {
    set(k.c0, c0);
    set(k.ct, c_t);
    set(k.dct, dc_t);
    set(k.dc0, dc0);
  }
  dnnl_execute(k.primitive, k.args, op);
  k.dw.after(op);
  k.dr.after(op);
  dnnl_wait();
}

}  // namespace ef::cpu
