// Swin Transformers (Liu et al. 2021) with patch 4 and window 7 in timm's layout and parameter names
// (patch_embed.{proj,norm}, layers.S.downsample.{norm,reduction}, layers.S.blocks.J.{norm1,
// attn.qkv, attn.relative_position_bias_table, attn.proj, norm2, mlp.fc1, mlp.fc2}, norm, head.fc)
// and timm's initialisation. Blocks work on [B, H, W, C]. The relative-position index and the
// shifted windows' mask are not parameters (timm keeps them out of its state_dict): they are
// rebuilt on the input's device at each forward from arange, a few small kernels, so that no
// buffer joins checkpoints, EMA or FSDP's shards and nothing is copied from the host inside a
// captured CUDA graph.
#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <algorithm>
#include <array>

#include "cvtrain/models/architectures.h"
#include "cvtrain/models/layers.h"
#include "cvtrain/models/mlp.h"
#include "cvtrain/models/recompute.h"
#include "cvtrain/recipe/recipe.h"

namespace cvtrain {
// Named, so that its blocks keep apart from other architectures' where sources are compiled together
// (CVTRAIN_UNITY_BUILD).
namespace swin_model {
namespace {

namespace nn = torch::nn;

constexpr int64_t kStages = 4;
constexpr int64_t kPatch = 4;
constexpr int64_t kWindow = 7;
constexpr double kMaskedOut = -100.0;  // timm's value for pairs from different regions of a shifted window

struct SwinSize {
  int64_t width;  // of the first stage; each later stage doubles it
  std::array<int64_t, kStages> depths, heads;
};

nn::LayerNorm layer_norm(int64_t width) { return nn::LayerNorm(nn::LayerNormOptions({width})); }  // eps 1e-5, as timm's

// Window and shift of one side, as timm fixes them for the stage's resolution: a side no longer than
// the window is one window, unshifted.
struct WindowPlan {
  int64_t window, shift;
};
WindowPlan window_plan(int64_t resolution, bool shifted) {
  if (resolution <= kWindow) return {resolution, 0};
  return {kWindow, shifted ? kWindow / 2 : 0};
}

// [B, H, W, C] (H and W multiples of w) -> [B * windows, w * w, C], windows in row-major order.
at::Tensor partition(const at::Tensor& x, int64_t w) {
  const int64_t b = x.size(0), h = x.size(1), width = x.size(2), c = x.size(3);
  return x.view({b, h / w, w, width / w, w, c}).permute({0, 1, 3, 2, 4, 5}).reshape({-1, w * w, c});
}
at::Tensor merge(const at::Tensor& windows, int64_t w, int64_t h, int64_t width) {
  const int64_t c = windows.size(-1);
  return windows.view({-1, h / w, width / w, w, w, c}).permute({0, 1, 3, 2, 4, 5}).reshape({-1, h, width, c});
}

// For each pair of tokens (i, j) of a w x w window, the row of the (2w-1)^2 bias table that holds
// their offset: (dy + w - 1) * (2w - 1) + dx + w - 1, as timm's get_relative_position_index.
at::Tensor relative_position_index(int64_t w, const at::Device& device) {
  const at::Tensor tokens = at::arange(w * w, at::TensorOptions().dtype(at::kLong).device(device));
  const at::Tensor row = tokens.div(w, "floor"), column = tokens.remainder(w);
  return ((row.unsqueeze(1) - row.unsqueeze(0) + (w - 1)) * (2 * w - 1) + column.unsqueeze(1) - column.unsqueeze(0) + (w - 1)).flatten();
}

// The shifted windows' mask [windows, w*w, w*w]: after the cyclic shift a window at the bottom or
// right edge holds pixels from up to four image regions, which must not attend to each other.
// Regions as timm's get_attn_mask numbers them on the padded map: [0, H-w), [H-w, H-s), [H-s, H).
at::Tensor shifted_window_mask(int64_t h, int64_t width, int64_t w, int64_t s, const at::TensorOptions& options) {
  const auto region = [&](int64_t size) {
    const at::Tensor at = at::arange(size, options.dtype(at::kLong));
    return (at >= size - w).to(at::kLong) + (at >= size - s).to(at::kLong);
  };
  const at::Tensor regions = (region(h).unsqueeze(1) * 3 + region(width).unsqueeze(0)).view({1, h, width, 1});
  const at::Tensor per_window = partition(regions, w).squeeze(-1);  // [windows, w*w]
  const at::Tensor differs = per_window.unsqueeze(1) != per_window.unsqueeze(2);
  return at::zeros(differs.sizes(), options).masked_fill(differs, kMaskedOut);
}

class WindowAttentionImpl : public nn::Module {
 public:
  WindowAttentionImpl(int64_t width, int64_t heads, int64_t window)
      : heads_(heads),
        window_(window),
        relative_position_bias_table(
            register_parameter("relative_position_bias_table", at::zeros({(2 * window - 1) * (2 * window - 1), heads}))),
        qkv(register_module("qkv", nn::Linear(width, 3 * width))),
        proj(register_module("proj", nn::Linear(width, width))) {}

  // windows [B * nW, N, C]; mask [nW, N, N] or undefined.
  at::Tensor forward(const at::Tensor& windows, const at::Tensor& mask) {
    const int64_t n = windows.size(1), c = windows.size(2);
    const at::Tensor parts = qkv(windows).reshape({-1, n, 3, heads_, c / heads_}).permute({2, 0, 3, 1, 4});
    const at::Tensor bias = relative_position_bias_table.index_select(0, relative_position_index(window_, windows.device()))
                                .view({n, n, heads_})
                                .permute({2, 0, 1});  // [heads, N, N]
    at::Tensor out;
    if (!mask.defined()) {
      out = at::scaled_dot_product_attention(parts[0], parts[1], parts[2], bias.unsqueeze(0));
    } else {  // windows of one image share a mask: [B, nW, heads, N, d] against [1, nW, heads, N, N]
      const int64_t count = mask.size(0);
      const auto per_image = [&](const at::Tensor& t) { return t.view({-1, count, heads_, n, t.size(-1)}); };
      const at::Tensor bias_and_mask = (bias.unsqueeze(0) + mask.unsqueeze(1)).unsqueeze(0);
      out = at::scaled_dot_product_attention(per_image(parts[0]), per_image(parts[1]), per_image(parts[2]), bias_and_mask)
                .view({-1, heads_, n, c / heads_});
    }
    return proj(out.transpose(1, 2).reshape({-1, n, c}));
  }

 private:
  int64_t heads_, window_;

 public:
  at::Tensor relative_position_bias_table;
  nn::Linear qkv, proj;
};
TORCH_MODULE(WindowAttention);

class BlockImpl : public nn::Module, public RecomputableBlock {
 public:
  BlockImpl(int64_t width, int64_t heads, WindowPlan plan, double drop_path)
      : plan_(plan),
        drop_path_(drop_path),
        norm1(register_module("norm1", layer_norm(width))),
        attn(register_module("attn", WindowAttention(width, heads, plan.window))),
        norm2(register_module("norm2", layer_norm(width))),
        mlp(register_module("mlp", Mlp(width))) {}

  at::Tensor forward_block(const at::Tensor& x) override {  // [B,H,W,C]
    const at::Tensor y = x + drop_path(windowed_attention(norm1(x)), drop_path_, is_training());
    return y + drop_path(mlp(norm2(y)), drop_path_, is_training());
  }

 private:
  // Shift the map up and left by `shift`, pad it to whole windows, attend within each window, and
  // undo the three.
  at::Tensor windowed_attention(const at::Tensor& x) {
    const int64_t h = x.size(1), width = x.size(2), w = plan_.window, s = plan_.shift;
    at::Tensor shifted = s > 0 ? at::roll(x, {-s, -s}, {1, 2}) : x;
    const int64_t pad_h = (w - h % w) % w, pad_w = (w - width % w) % w;
    if (pad_h > 0 || pad_w > 0) shifted = at::constant_pad_nd(shifted, {0, 0, 0, pad_w, 0, pad_h});
    const at::Tensor mask = s > 0 ? shifted_window_mask(h + pad_h, width + pad_w, w, s, x.options()) : at::Tensor();
    at::Tensor out = merge(attn(partition(shifted, w), mask), w, h + pad_h, width + pad_w);
    if (pad_h > 0 || pad_w > 0) out = out.slice(1, 0, h).slice(2, 0, width);
    return s > 0 ? at::roll(out, {s, s}, {1, 2}) : out;
  }

  WindowPlan plan_;
  double drop_path_;

 public:
  nn::LayerNorm norm1;
  WindowAttention attn;
  nn::LayerNorm norm2;
  Mlp mlp;
};
TORCH_MODULE(Block);

// Each 2x2 neighbourhood's four vectors concatenated (timm's order), normalised and projected to
// twice the width: half the resolution.
class PatchMergingImpl : public nn::Module {
 public:
  explicit PatchMergingImpl(int64_t width)
      : norm(register_module("norm", layer_norm(4 * width))),
        reduction(register_module("reduction", nn::Linear(nn::LinearOptions(4 * width, 2 * width).bias(false)))) {}
  at::Tensor forward(at::Tensor x) {  // [B,H,W,C] -> [B,H/2,W/2,2C]
    if (x.size(1) % 2 != 0 || x.size(2) % 2 != 0) x = at::constant_pad_nd(x, {0, 0, 0, x.size(2) % 2, 0, x.size(1) % 2});
    const int64_t b = x.size(0), h = x.size(1), w = x.size(2), c = x.size(3);
    return reduction(norm(x.reshape({b, h / 2, 2, w / 2, 2, c}).permute({0, 1, 3, 4, 2, 5}).flatten(3)));
  }
  nn::LayerNorm norm;
  nn::Linear reduction;
};
TORCH_MODULE(PatchMerging);

class SwinTransformer : public Classifier {
 public:
  SwinTransformer(const SwinSize& size, const ModelSpec& spec, int64_t in_channels) {
    grad_checkpointing_ = spec.grad_checkpointing;
    auto patch_embed = register_module("patch_embed", std::make_shared<nn::Module>());
    patch_proj_ = patch_embed->register_module("proj", nn::Conv2d(nn::Conv2dOptions(in_channels, size.width, kPatch).stride(kPatch)));
    patch_norm_ = patch_embed->register_module("norm", layer_norm(size.width));
    auto layers = register_module("layers", nn::ModuleList());
    int64_t depth = 0;
    for (int64_t d : size.depths) depth += d;
    const std::vector<double> rates = drop_path_rates(spec.drop_path, depth);
    int64_t width = size.width, resolution = spec.image_size / kPatch;
    size_t block_index = 0;
    for (int64_t s = 0; s < kStages; ++s) {
      auto stage = std::make_shared<nn::Module>();
      if (s > 0) {
        merges_.push_back(stage->register_module("downsample", PatchMerging(width)));
        width *= 2;
        resolution = (resolution + 1) / 2;
      }
      auto blocks = stage->register_module("blocks", nn::ModuleList());
      for (int64_t j = 0; j < size.depths[s]; ++j) {
        Block block(width, size.heads[s], window_plan(resolution, j % 2 == 1), rates[block_index++]);
        blocks->push_back(block);
        add_block(*block, *block);
      }
      layers->push_back(stage);
      last_block_of_stage_.push_back(block_index - 1);
    }
    norm_ = register_module("norm", layer_norm(width));
    auto head = register_module("head", std::make_shared<nn::Module>());
    fc_ = head->register_module("fc", nn::Linear(width, spec.num_classes));
    initialise();
  }

  at::Tensor forward(const at::Tensor& images) override {
    at::Tensor x = patch_norm_(patch_proj_(images).permute({0, 2, 3, 1}));  // [B,H,W,C]
    size_t block = 0;
    for (int64_t s = 0; s < kStages; ++s) {
      if (s > 0) x = merges_[s - 1]->forward(x);
      for (; block <= last_block_of_stage_[s]; ++block) x = run_block(block, x);
    }
    return fc_(norm_(x).mean({1, 2}));
  }

 private:
  // timm's init_weights_vit_timm: truncated normal (std 0.02) for linear weights and the bias
  // tables, zero biases; the patch convolution and LayerNorms keep PyTorch's defaults.
  void initialise() {
    torch::NoGradGuard no_grad;
    apply([](nn::Module& module) {
      if (auto* linear = module.as<nn::LinearImpl>()) {
        trunc_normal_(linear->weight, 0.0, 0.02, -2.0, 2.0);
        if (linear->bias.defined()) nn::init::zeros_(linear->bias);
      } else if (auto* attention = module.as<WindowAttentionImpl>()) {
        trunc_normal_(attention->relative_position_bias_table, 0.0, 0.02, -2.0, 2.0);
      }
    });
  }

  nn::Conv2d patch_proj_{nullptr};
  nn::LayerNorm patch_norm_{nullptr}, norm_{nullptr};
  std::vector<PatchMerging> merges_;
  std::vector<size_t> last_block_of_stage_;
  nn::Linear fc_{nullptr};
};

SwinSize swin_size(const std::string& variant) {
  if (variant == "tiny") return {96, {2, 2, 6, 2}, {3, 6, 12, 24}};
  return {96, {2, 2, 18, 2}, {3, 6, 12, 24}};  // small
}

}  // namespace
}  // namespace swin_model

// model.image_size is a multiple of kPatch: model_problems (models/arch_traits.cpp) checks recipes.
std::shared_ptr<Classifier> make_swin(const std::string& variant, const ModelSpec& spec, int64_t in_channels) {
  return std::make_shared<swin_model::SwinTransformer>(swin_model::swin_size(variant), spec, in_channels);
}

}  // namespace cvtrain
