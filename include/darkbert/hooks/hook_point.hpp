#pragma once
/// @file
/// The places in the forward pass where a researcher can look or intervene, named as in TransformerLens:
///
/// @code
/// hook_embed                       [B, L, H]        embedding block output (after the embedding LayerNorm
///                                                   for BERT-style models; wte + wpe for GPT-2)
/// blocks.{l}.hook_resid_pre        [B, L, H]        residual stream entering block l
/// blocks.{l}.attn.hook_q|k|v       [B, L, heads, d] projections, per head
/// blocks.{l}.attn.hook_attn_scores [B, heads, L, L] scaled scores after the padding/causal mask
///                                                   (padding keys = lowest finite value, future keys = -inf)
/// blocks.{l}.attn.hook_pattern     [B, heads, L, L] attention probabilities, after masking policies,
///                                                   before multiplying by V
/// blocks.{l}.attn.hook_z           [B, L, heads, d] per-head context (pattern · V)
/// blocks.{l}.hook_attn_out         [B, L, H]        attention block output (after W_O, before residual)
/// blocks.{l}.hook_resid_mid        [B, L, H]        after the attention residual (post-LN: after its LayerNorm)
/// blocks.{l}.mlp.hook_post         [B, L, I]        MLP hidden activation (after GELU)
/// blocks.{l}.hook_mlp_out          [B, L, H]        MLP output (before residual)
/// blocks.{l}.hook_resid_post       [B, L, H]        residual stream leaving block l (= hidden_states[l+1])
/// ln_final.hook_normalized         [B, L, H]        GPT-2 final LayerNorm output
/// @endcode

#include <array>        // std::array
#include <cstdint>      // std::uint8_t
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

namespace darkbert {

/// The places of the forward pass where hooks fire, named as in TransformerLens (hook_name() spells them).
/// @code
/// darkbert::hook_name(darkbert::HookPoint::pattern, 3);  // "blocks.3.attn.hook_pattern"
/// @endcode
enum class HookPoint : std::uint8_t {
  embed,
  resid_pre,
  q,
  k,
  v,
  attn_scores,
  pattern,
  z,
  attn_out,
  resid_mid,
  mlp_post,
  mlp_out,
  resid_post,
  ln_final,
};
/// Number of HookPoint values.
inline constexpr std::size_t hook_point_count = 14;

/// The suffix after "blocks.{l}." (per-layer points) or the whole name (global points).
inline constexpr std::string_view hook_point_suffix(HookPoint p) {
  constexpr std::array<std::string_view, hook_point_count> names = {
      "hook_embed",        "hook_resid_pre", "attn.hook_q",   "attn.hook_k",     "attn.hook_v",
      "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z", "hook_attn_out", "hook_resid_mid",
      "mlp.hook_post",     "hook_mlp_out",   "hook_resid_post", "ln_final.hook_normalized"};
  return names[static_cast<std::size_t>(p)];
}

/// Whether the point exists once per layer ("blocks.{l}.…") rather than once per forward pass.
inline constexpr bool is_per_layer(HookPoint p) { return p != HookPoint::embed && p != HookPoint::ln_final; }

/// Full name of a hook point: "blocks.3.attn.hook_pattern", "hook_embed".
inline std::string hook_name(HookPoint p, int layer = -1) {
  if (!is_per_layer(p)) return std::string(hook_point_suffix(p));
  return "blocks." + std::to_string(layer) + "." + std::string(hook_point_suffix(p));
}

/// Parses a full hook name back into (point, layer); nullopt if it is not a darkbert hook name.
struct ParsedHookName {
  HookPoint point;  ///<  which point
  int layer;  ///< -1 for global points
};
/// `parse_hook_name("blocks.3.attn.hook_pattern")` gives {HookPoint::pattern, 3}; nullopt for an unknown name.
inline std::optional<ParsedHookName> parse_hook_name(std::string_view name) {
  for (std::size_t i = 0; i < hook_point_count; ++i) {
    const auto p = static_cast<HookPoint>(i);
    if (!is_per_layer(p)) {
      if (name == hook_point_suffix(p)) return ParsedHookName{p, -1};
      continue;
    }
    constexpr std::string_view prefix = "blocks.";
    if (name.substr(0, prefix.size()) != prefix) continue;
    const auto dot = name.find('.', prefix.size());
    if (dot == std::string_view::npos || name.substr(dot + 1) != hook_point_suffix(p)) continue;
    int layer = 0;
    const auto digits = name.substr(prefix.size(), dot - prefix.size());
    if (digits.empty()) continue;
    bool ok = true;
    for (char c : digits) {
      if (c < '0' || c > '9') ok = false;
      layer = layer * 10 + (c - '0');
    }
    if (ok) return ParsedHookName{p, layer};
  }
  return std::nullopt;
}

}  // namespace darkbert
