#include <algorithm>
#include <cmath>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>

#include "mnist/kernels.h"
#include "mnist/model.h"

namespace hvd::mnist {
namespace {

namespace dn = dnnl;
using Tag = dn::memory::format_tag;
using Dims = dn::memory::dims;
constexpr auto kF32 = dn::memory::data_type::f32;

dn::memory::desc Plain(const Dims& d, Tag t) { return {d, kF32, t}; }
dn::memory::desc Any(const Dims& d) { return {d, kF32, Tag::any}; }

// `d` (an activation's layout) for a batch of `n`; oneDNN's own choice
// where the batch is not the outermost dimension.
dn::memory::desc LikeBatch(const dn::memory::desc& d, int n) {
  const auto& blk = d.data.format_desc.blocking;
  bool outermost = d.data.format_kind == dnnl_blocked;
  for (int i = 1; i < d.data.ndims && outermost; ++i) {
    outermost = blk.strides[i] <= blk.strides[0];
  }
  if (!outermost) {
    Dims dims(d.data.dims, d.data.dims + d.data.ndims);
    dims[0] = n;
    return Any(dims);
  }
  dn::memory::desc out = d;
  out.data.dims[0] = n;
  out.data.padded_dims[0] = n;
  return out;
}

// A fast generator for dropout masks (xorshift64*).
inline uint64_t Next(uint64_t& s) {
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 2685821657736338717ULL;
}

// Everything oneDNN needs for one batch size: primitive descriptors,
// primitives and the activations kept between Forward and Backward.
struct Net {
  explicit Net(int batch)
      : n(batch), eng(dn::engine::kind::cpu, 0), strm(eng) {}

  int n;
  dn::engine eng;
  dn::stream strm;

  dn::memory Make(const dn::memory::desc& d) { return dn::memory(d, eng); }

  // `m` in the layout `want`: itself, or a reorder into `scratch`.
  dn::memory Ensure(const dn::memory& m, const dn::memory::desc& want,
                    dn::memory& scratch) {
    if (m.get_desc() == want) return m;
    if (!scratch || scratch.get_desc() != want) scratch = Make(want);
    Reorder(m, scratch);
    return scratch;
  }
  // (Memory objects are handles: copies share the buffer.)
  void Reorder(dn::memory from, dn::memory to) {
    dn::reorder(from, to).execute(strm, from, to);
  }

  // Forward.
  dn::memory x;  // n x 1 x 28 x 28, plain
  dn::convolution_forward::primitive_desc c1_pd, c2_pd;
  dn::pooling_forward::primitive_desc pool_pd;
  dn::inner_product_forward::primitive_desc d1_pd, d2_pd;
  dn::memory x_c1, w1, b1, y1, y1_c2, w2, b2, y2, ws, p, drop1, w3, b3, h,
      drop2, w4, b4, logits;
  std::vector<float> mask1, mask2;

  // Backward.
  dn::inner_product_backward_weights::primitive_desc d2_bw_pd, d1_bw_pd;
  dn::inner_product_backward_data::primitive_desc d2_bd_pd, d1_bd_pd;
  dn::pooling_backward::primitive_desc pool_b_pd;
  dn::convolution_backward_weights::primitive_desc c2_bw_pd, c1_bw_pd;
  dn::convolution_backward_data::primitive_desc c2_bd_pd;
  dn::memory dlogits, dw4, db4, dh, dw3, db3, dp, dy2, dw2, db2, dy1, dw1, db1;
  dn::memory s1, s2, s3, s4, s5, s6, s7, s8, s9, s10;  // reorder scratch
};

class DnnlCompute final : public Compute {
 public:
  explicit DnnlCompute(uint64_t seed)
      : rng_(seed * 0x9E3779B97F4A7C15ULL + 1) {}
  Status Forward(const std::vector<Param>& params, const float* images, int n,
                 bool training, bool dropout, float* logits) override;
  Status Backward(std::vector<Param>& params, const float* dlogits,
                  const std::function<void(int)>& ready) override;
  std::string Describe() const override { return "oneDNN on the CPU"; }

 private:
  StatusOr<Net*> NetFor(int n);
  std::map<int, std::unique_ptr<Net>> nets_;
  Net* last_ = nullptr;  // of the last training Forward
  uint64_t rng_;
};

}  // namespace

StatusOr<Net*> DnnlCompute::NetFor(int n) {
  auto found = nets_.find(n);
  if (found != nets_.end()) return found->second.get();
  try {
    auto net = std::make_unique<Net>(n);
    Net& t = *net;
    const Dims strides{1, 1}, pad{0, 0}, pool{2, 2};
    // conv1 + ReLU.
    dn::post_ops relu;
    relu.append_eltwise(1.0f, dn::algorithm::eltwise_relu, 0.0f, 0.0f);
    dn::primitive_attr with_relu;
    with_relu.set_post_ops(relu);
    t.x = t.Make(Plain({n, 1, kImageSide, kImageSide}, Tag::nchw));
    t.c1_pd = dn::convolution_forward::primitive_desc(
        dn::convolution_forward::desc(
            dn::prop_kind::forward_training, dn::algorithm::convolution_direct,
            Any({n, 1, 28, 28}), Any({32, 1, 3, 3}), Plain({32}, Tag::x),
            Any({n, 32, 26, 26}), strides, pad, pad),
        with_relu, t.eng);
    t.w1 = t.Make(t.c1_pd.weights_desc());
    t.b1 = t.Make(t.c1_pd.bias_desc());
    t.y1 = t.Make(t.c1_pd.dst_desc());
    // conv2 + ReLU.
    t.c2_pd = dn::convolution_forward::primitive_desc(
        dn::convolution_forward::desc(
            dn::prop_kind::forward_training, dn::algorithm::convolution_direct,
            Any({n, 32, 26, 26}), Any({64, 32, 3, 3}), Plain({64}, Tag::x),
            Any({n, 64, 24, 24}), strides, pad, pad),
        with_relu, t.eng);
    t.w2 = t.Make(t.c2_pd.weights_desc());
    t.b2 = t.Make(t.c2_pd.bias_desc());
    t.y2 = t.Make(t.c2_pd.dst_desc());
    // Max pooling 2x2 in conv2's output layout.
    t.pool_pd = dn::pooling_forward::primitive_desc(
        dn::pooling_forward::desc(dn::prop_kind::forward_training,
                                  dn::algorithm::pooling_max, t.y2.get_desc(),
                                  Any({n, 64, 12, 12}), pool, pool, pad, pad),
        t.eng);
    t.p = t.Make(t.pool_pd.dst_desc());
    t.ws = t.Make(t.pool_pd.workspace_desc());
    t.drop1 = t.Make(t.pool_pd.dst_desc());
    // dense1 + ReLU straight on the pooled 4-D layout (the flatten), with
    // its weights in that same layout (128 "images" of 64 x 12 x 12): the
    // GEMM reads both alike, so the backward data pass needs no reorder
    // and the ones to and from the plain layout are cheap.
    const dn::memory::desc w3_desc = LikeBatch(t.p.get_desc(), 128);
    t.d1_pd = dn::inner_product_forward::primitive_desc(
        dn::inner_product_forward::desc(dn::prop_kind::forward_training,
                                        t.drop1.get_desc(), w3_desc,
                                        Plain({128}, Tag::x), Any({n, 128})),
        with_relu, t.eng);
    t.w3 = t.Make(t.d1_pd.weights_desc());
    t.b3 = t.Make(t.d1_pd.bias_desc());
    t.h = t.Make(t.d1_pd.dst_desc());
    t.drop2 = t.Make(t.d1_pd.dst_desc());
    // dense2: plain logits.
    t.d2_pd = dn::inner_product_forward::primitive_desc(
        dn::inner_product_forward::desc(
            dn::prop_kind::forward_training, t.drop2.get_desc(), Any({10, 128}),
            Plain({10}, Tag::x), Plain({n, 10}, Tag::nc)),
        t.eng);
    t.w4 = t.Make(t.d2_pd.weights_desc());
    t.b4 = t.Make(t.d2_pd.bias_desc());
    t.logits = t.Make(t.d2_pd.dst_desc());
    t.mask1.resize(t.p.get_desc().get_size() / 4);
    t.mask2.resize(t.h.get_desc().get_size() / 4);

    // Backward, with the gradients of activations in the activations'
    // layouts.
    t.dlogits = t.Make(Plain({n, 10}, Tag::nc));
    t.d2_bw_pd = dn::inner_product_backward_weights::primitive_desc(
        dn::inner_product_backward_weights::desc(
            t.drop2.get_desc(), Any({10, 128}), Plain({10}, Tag::x),
            t.dlogits.get_desc()),
        t.eng, t.d2_pd);
    t.d2_bd_pd = dn::inner_product_backward_data::primitive_desc(
        dn::inner_product_backward_data::desc(t.h.get_desc(), Any({10, 128}),
                                              t.dlogits.get_desc()),
        t.eng, t.d2_pd);
    t.dw4 = t.Make(t.d2_bw_pd.diff_weights_desc());
    t.db4 = t.Make(t.d2_bw_pd.diff_bias_desc());
    t.dh = t.Make(t.h.get_desc());
    t.d1_bw_pd = dn::inner_product_backward_weights::primitive_desc(
        dn::inner_product_backward_weights::desc(
            t.drop1.get_desc(), w3_desc, Plain({128}, Tag::x), t.h.get_desc()),
        t.eng, t.d1_pd);
    t.d1_bd_pd = dn::inner_product_backward_data::primitive_desc(
        dn::inner_product_backward_data::desc(t.p.get_desc(), w3_desc,
                                              t.h.get_desc()),
        t.eng, t.d1_pd);
    t.dw3 = t.Make(t.d1_bw_pd.diff_weights_desc());
    t.db3 = t.Make(t.d1_bw_pd.diff_bias_desc());
    t.dp = t.Make(t.p.get_desc());
    t.pool_b_pd = dn::pooling_backward::primitive_desc(
        dn::pooling_backward::desc(dn::algorithm::pooling_max, t.y2.get_desc(),
                                   t.p.get_desc(), pool, pool, pad, pad),
        t.eng, t.pool_pd);
    t.dy2 = t.Make(t.y2.get_desc());
    t.c2_bw_pd = dn::convolution_backward_weights::primitive_desc(
        dn::convolution_backward_weights::desc(
            dn::algorithm::convolution_direct, t.c2_pd.src_desc(),
            Any({64, 32, 3, 3}), Plain({64}, Tag::x), t.y2.get_desc(), strides,
            pad, pad),
        t.eng, t.c2_pd);
    t.c2_bd_pd = dn::convolution_backward_data::primitive_desc(
        dn::convolution_backward_data::desc(
            dn::algorithm::convolution_direct, t.y1.get_desc(),
            Any({64, 32, 3, 3}), t.y2.get_desc(), strides, pad, pad),
        t.eng, t.c2_pd);
    t.dw2 = t.Make(t.c2_bw_pd.diff_weights_desc());
    t.db2 = t.Make(t.c2_bw_pd.diff_bias_desc());
    t.dy1 = t.Make(t.y1.get_desc());
    t.c1_bw_pd = dn::convolution_backward_weights::primitive_desc(
        dn::convolution_backward_weights::desc(
            // Free layouts: for one input channel, oneDNN's fast kernel
            // wants its own (Ensure reorders into them).
            dn::algorithm::convolution_direct, Any({n, 1, 28, 28}),
            Any({32, 1, 3, 3}), Plain({32}, Tag::x), Any({n, 32, 26, 26}),
            strides, pad, pad),
        t.eng, t.c1_pd);
    t.dw1 = t.Make(t.c1_bw_pd.diff_weights_desc());
    t.db1 = t.Make(t.c1_bw_pd.diff_bias_desc());
    Net* raw = net.get();
    nets_[n] = std::move(net);
    return raw;
  } catch (const dn::error& e) {
    return Status::Internal("oneDNN",
                            std::string("building the network: ") + e.what());
  }
}

Status DnnlCompute::Forward(const std::vector<Param>& params_,
                            const float* images, int n, bool training,
                            bool dropout_, float* logits) {
  HVD_ASSIGN_OR_RETURN(Net * net, NetFor(n));
  Net& t = *net;
  try {
    auto plain = [&](int k, Tag tag) {
      Dims d(params_[k].dims.begin(), params_[k].dims.end());
      return dn::memory(Plain(d, tag), t.eng,
                        const_cast<float*>(params_[k].value.data()));
    };
    // The current weights into the primitives' layouts.
    t.Reorder(plain(kConv1W, Tag::oihw), t.w1);
    t.Reorder(plain(kConv1B, Tag::x), t.b1);
    t.Reorder(plain(kConv2W, Tag::oihw), t.w2);
    t.Reorder(plain(kConv2B, Tag::x), t.b2);
    t.Reorder(plain(kDense1W, Tag::oihw), t.w3);
    t.Reorder(plain(kDense1B, Tag::x), t.b3);
    t.Reorder(plain(kDense2W, Tag::oi), t.w4);
    t.Reorder(plain(kDense2B, Tag::x), t.b4);
    std::memcpy(t.x.get_data_handle(), images,
                static_cast<size_t>(n) * kImageSide * kImageSide * 4);
    t.x_c1 = t.Ensure(t.x, t.c1_pd.src_desc(), t.s1);
    dn::convolution_forward(t.c1_pd).execute(t.strm, {{DNNL_ARG_SRC, t.x_c1},
                                                      {DNNL_ARG_WEIGHTS, t.w1},
                                                      {DNNL_ARG_BIAS, t.b1},
                                                      {DNNL_ARG_DST, t.y1}});
    t.y1_c2 = t.Ensure(t.y1, t.c2_pd.src_desc(), t.s2);
    dn::convolution_forward(t.c2_pd).execute(t.strm, {{DNNL_ARG_SRC, t.y1_c2},
                                                      {DNNL_ARG_WEIGHTS, t.w2},
                                                      {DNNL_ARG_BIAS, t.b2},
                                                      {DNNL_ARG_DST, t.y2}});
    dn::pooling_forward(t.pool_pd).execute(t.strm,
                                           {{DNNL_ARG_SRC, t.y2},
                                            {DNNL_ARG_DST, t.p},
                                            {DNNL_ARG_WORKSPACE, t.ws}});
    t.strm.wait();
    // Dropout 0.25 (Keras scales what it keeps by 1 / (1 - rate)).
    auto dropout = [&](const dn::memory& in, const dn::memory& out,
                       std::vector<float>& mask, float rate) {
      const float* a = static_cast<const float*>(in.get_data_handle());
      float* b = static_cast<float*>(out.get_data_handle());
      if (!training || !dropout_) {
        std::fill(mask.begin(), mask.end(), 1.0f);
        std::memcpy(b, a, mask.size() * 4);
        return;
      }
      Dropout(a, b, mask.data(), mask.size(), rate, Next(rng_));
    };
    dropout(t.p, t.drop1, t.mask1, 0.25f);
    dn::inner_product_forward(t.d1_pd).execute(t.strm,
                                               {{DNNL_ARG_SRC, t.drop1},
                                                {DNNL_ARG_WEIGHTS, t.w3},
                                                {DNNL_ARG_BIAS, t.b3},
                                                {DNNL_ARG_DST, t.h}});
    t.strm.wait();
    dropout(t.h, t.drop2, t.mask2, 0.5f);
    dn::inner_product_forward(t.d2_pd).execute(t.strm,
                                               {{DNNL_ARG_SRC, t.drop2},
                                                {DNNL_ARG_WEIGHTS, t.w4},
                                                {DNNL_ARG_BIAS, t.b4},
                                                {DNNL_ARG_DST, t.logits}});
    t.strm.wait();
  } catch (const dn::error& e) {
    return Status::Internal("oneDNN", std::string("forward: ") + e.what());
  }
  std::memcpy(logits, t.logits.get_data_handle(),
              static_cast<size_t>(n) * kClasses * 4);
  last_ = training ? &t : nullptr;
  return Status::Ok();
}

Status DnnlCompute::Backward(std::vector<Param>& params_, const float* dlogits,
                             const std::function<void(int)>& ready) {
  if (!last_) {
    return Status::FailedPrecondition("backward", "needs a training forward");
  }
  Net& t = *last_;
  const int n = t.n;
  try {
    std::memcpy(t.dlogits.get_data_handle(), dlogits,
                static_cast<size_t>(n) * kClasses * 4);
    auto to_plain = [&](const dn::memory& m, int k, Tag tag) {
      Dims d(params_[k].dims.begin(), params_[k].dims.end());
      dn::memory dst(Plain(d, tag), t.eng, params_[k].grad.data());
      t.Reorder(m, dst);
      t.strm.wait();
      if (ready) ready(k);
    };
    // dense2.
    dn::inner_product_backward_weights(t.d2_bw_pd)
        .execute(t.strm, {{DNNL_ARG_SRC, t.drop2},
                          {DNNL_ARG_DIFF_DST, t.dlogits},
                          {DNNL_ARG_DIFF_WEIGHTS, t.dw4},
                          {DNNL_ARG_DIFF_BIAS, t.db4}});
    dn::inner_product_backward_data(t.d2_bd_pd)
        .execute(t.strm, {{DNNL_ARG_DIFF_DST, t.dlogits},
                          {DNNL_ARG_WEIGHTS,
                           t.Ensure(t.w4, t.d2_bd_pd.weights_desc(), t.s3)},
                          {DNNL_ARG_DIFF_SRC, t.dh}});
    to_plain(t.dw4, kDense2W, Tag::oi);
    to_plain(t.db4, kDense2B, Tag::x);
    t.strm.wait();
    // Dropout 0.5 and ReLU backward, in the activation's own layout.
    ReluBackward(static_cast<float*>(t.dh.get_data_handle()), t.mask2.data(),
                 static_cast<const float*>(t.h.get_data_handle()),
                 t.mask2.size());
    // dense1.
    dn::inner_product_backward_weights(t.d1_bw_pd)
        .execute(t.strm, {{DNNL_ARG_SRC, t.drop1},
                          {DNNL_ARG_DIFF_DST, t.dh},
                          {DNNL_ARG_DIFF_WEIGHTS, t.dw3},
                          {DNNL_ARG_DIFF_BIAS, t.db3}});
    dn::inner_product_backward_data(t.d1_bd_pd)
        .execute(t.strm, {{DNNL_ARG_DIFF_DST, t.dh},
                          {DNNL_ARG_WEIGHTS,
                           t.Ensure(t.w3, t.d1_bd_pd.weights_desc(), t.s4)},
                          {DNNL_ARG_DIFF_SRC, t.dp}});
    to_plain(t.dw3, kDense1W, Tag::oihw);
    to_plain(t.db3, kDense1B, Tag::x);
    t.strm.wait();
    // Dropout 0.25, conv2's ReLU, then max pooling. Pooling sends each
    // gradient to its window's maximum, where conv2's output equals the
    // pooled value, so ReLU's test on the pooled output (a quarter of the
    // size) is the same as on conv2's.
    ReluBackward(static_cast<float*>(t.dp.get_data_handle()), t.mask1.data(),
                 static_cast<const float*>(t.p.get_data_handle()),
                 t.mask1.size());
    dn::pooling_backward(t.pool_b_pd)
        .execute(t.strm, {{DNNL_ARG_DIFF_DST, t.dp},
                          {DNNL_ARG_WORKSPACE, t.ws},
                          {DNNL_ARG_DIFF_SRC, t.dy2}});
    t.strm.wait();
    // conv2.
    dn::convolution_backward_weights(t.c2_bw_pd)
        .execute(t.strm, {{DNNL_ARG_SRC,
                           t.Ensure(t.y1_c2, t.c2_bw_pd.src_desc(), t.s5)},
                          {DNNL_ARG_DIFF_DST,
                           t.Ensure(t.dy2, t.c2_bw_pd.diff_dst_desc(), t.s6)},
                          {DNNL_ARG_DIFF_WEIGHTS, t.dw2},
                          {DNNL_ARG_DIFF_BIAS, t.db2}});
    dn::convolution_backward_data(t.c2_bd_pd)
        .execute(t.strm, {{DNNL_ARG_DIFF_DST,
                           t.Ensure(t.dy2, t.c2_bd_pd.diff_dst_desc(), t.s7)},
                          {DNNL_ARG_WEIGHTS,
                           t.Ensure(t.w2, t.c2_bd_pd.weights_desc(), t.s8)},
                          {DNNL_ARG_DIFF_SRC, t.dy1}});
    to_plain(t.dw2, kConv2W, Tag::oihw);
    to_plain(t.db2, kConv2B, Tag::x);
    t.strm.wait();
    ReluBackward(static_cast<float*>(t.dy1.get_data_handle()), nullptr,
                 static_cast<const float*>(t.y1.get_data_handle()),
                 t.y1.get_desc().get_size() / 4);
    // conv1 (no gradient for the images).
    dn::convolution_backward_weights(t.c1_bw_pd)
        .execute(t.strm,
                 {{DNNL_ARG_SRC, t.Ensure(t.x_c1, t.c1_bw_pd.src_desc(), t.s9)},
                  {DNNL_ARG_DIFF_DST,
                   t.Ensure(t.dy1, t.c1_bw_pd.diff_dst_desc(), t.s10)},
                  {DNNL_ARG_DIFF_WEIGHTS, t.dw1},
                  {DNNL_ARG_DIFF_BIAS, t.db1}});
    to_plain(t.dw1, kConv1W, Tag::oihw);
    to_plain(t.db1, kConv1B, Tag::x);
    t.strm.wait();
  } catch (const dn::error& e) {
    return Status::Internal("oneDNN", std::string("backward: ") + e.what());
  }
  return Status::Ok();
}

std::unique_ptr<Compute> MakeDnnlCompute(uint64_t seed) {
  return std::make_unique<DnnlCompute>(seed);
}

}  // namespace hvd::mnist
