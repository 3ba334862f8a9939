// Hook points: names, scoping, filters, observing and modifying.
#include <doctest/doctest.h>

#include <optional>  // std::optional

#include <xtensor/xnpy.hpp>

#include "darkbert/hooks/hooks.hpp"
#include "darkbert/model/case_file.hpp"
#include "test_support.hpp"

namespace {
using darkbert::test::golden_dir;
}

TEST_CASE("hook names follow TransformerLens and parse back") {
  CHECK(darkbert::hook_name(darkbert::HookPoint::pattern, 3) == "blocks.3.attn.hook_pattern");
  CHECK(darkbert::hook_name(darkbert::HookPoint::embed) == "hook_embed");
  CHECK(darkbert::hook_name(darkbert::HookPoint::resid_post, 11) == "blocks.11.hook_resid_post");
  for (std::size_t i = 0; i < darkbert::hook_point_count; ++i) {
    const auto p = static_cast<darkbert::HookPoint>(i);
    const auto parsed = darkbert::parse_hook_name(darkbert::hook_name(p, 7));
    REQUIRE(parsed.has_value());
    CHECK(parsed->point == p);
    CHECK(parsed->layer == (darkbert::is_per_layer(p) ? 7 : -1));
  }
  CHECK_FALSE(darkbert::parse_hook_name("blocks.x.hook_resid_post").has_value());
  CHECK_FALSE(darkbert::parse_hook_name("blocks.1.attn.hook_nothing").has_value());
  CHECK(darkbert::HookFilter::glob_match("blocks.*.attn.hook_pattern", "blocks.10.attn.hook_pattern"));
  CHECK_FALSE(darkbert::HookFilter::glob_match("blocks.*.attn.hook_pattern", "blocks.10.attn.hook_z"));
}

TEST_CASE("every hook point fires once per layer with the documented shape") {
  for (const char* model_name : {"bert_model", "gpt2_lm"}) {
    const auto model = darkbert::Transformer<float>::load(golden_dir() / "models" / model_name);
    const auto& c = model.config();
    const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}, {3, 4}});
    darkbert::HookRegistry<float> hooks;
    std::map<std::string, std::vector<darkbert::Index>> seen;
    auto handle = hooks.add({.pattern = "*"}, [&](darkbert::HookContext<float>& ctx) {
      std::vector<darkbert::Index> shape(ctx.tensor.shape.begin(), ctx.tensor.shape.begin() + ctx.tensor.rank);
      CHECK_MESSAGE(seen.emplace(ctx.name(), shape).second, "fired twice: " << ctx.name());
    });
    model.forward(batch, {.hooks = &hooks});
    const darkbert::Index B = 2, L = 4, H = c.hidden_size, nh = c.num_heads, d = c.head_dim();
    using V = std::vector<darkbert::Index>;
    CHECK(seen.at("hook_embed") == V{B, L, H});
    CHECK(seen.count("ln_final.hook_normalized") == (c.pre_layer_norm ? 1u : 0u));
    for (int l = 0; l < c.num_layers; ++l) {
      const std::string p = "blocks." + std::to_string(l) + ".";
      CHECK(seen.at(p + "attn.hook_q") == V{B, L, nh, d});
      CHECK(seen.at(p + "attn.hook_v") == V{B, L, nh, d});
      CHECK(seen.at(p + "attn.hook_attn_scores") == V{B, nh, L, L});
      CHECK(seen.at(p + "attn.hook_pattern") == V{B, nh, L, L});
      CHECK(seen.at(p + "attn.hook_z") == V{B, L, nh, d});
      CHECK(seen.at(p + "mlp.hook_post") == V{B, L, c.intermediate_size});
      for (const char* s : {"hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"})
        CHECK(seen.at(p + s) == V{B, L, H});
    }
    CHECK(seen.size() == 1 + (c.pre_layer_norm ? 1 : 0) + 12 * static_cast<std::size_t>(c.num_layers));
  }
}

TEST_CASE("observed tensors are the forward's own values") {
  const auto model = darkbert::Transformer<double>::load(golden_dir() / "models" / "bert_model");
  const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}, {3, 4}});
  darkbert::HookRegistry<double> hooks;
  std::vector<double> pattern, resid;
  auto h1 = hooks.add({.points = {darkbert::HookPoint::pattern}, .layers = {1}}, [&](auto& ctx) {
    for (darkbert::Index i = 0; i < ctx.tensor.size(); ++i) pattern.push_back(ctx.tensor.data[i]);
  });
  auto h2 = hooks.add({.pattern = "blocks.2.hook_resid_post"}, [&](auto& ctx) {
    for (darkbert::Index i = 0; i < ctx.tensor.size(); ++i) resid.push_back(ctx.tensor.data[i]);
  });
  const auto out = model.forward(batch, {.hooks = &hooks});
  const auto att1 = xt::xarray<double>(xt::view(out.attentions, 1));
  REQUIRE(pattern.size() == att1.size());
  CHECK(std::equal(pattern.begin(), pattern.end(), att1.begin()));
  const auto h3 = xt::xarray<double>(xt::view(out.hidden_states, 3));
  CHECK(std::equal(resid.begin(), resid.end(), h3.begin()));
}

TEST_CASE("a hook that makes the pattern uniform reproduces every uniform golden case, like the built-in policy") {
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(golden_dir() / "cases")) {
    const auto file = darkbert::CaseFile::read(entry.path());
    const auto model = darkbert::Transformer<double>::load(file.model_dir);
    for (const auto& c : file.cases) {
      if (c.disable.empty()) continue;
      // Hand-written intervention: for every disabled (layer, head), overwrite the pattern rows.
      darkbert::HookRegistry<double> hooks;
      std::vector<darkbert::HookHandle> handles;
      for (const auto& d : c.disable) {
        darkbert::HookFilter filter{.points = {darkbert::HookPoint::pattern}, .layers = {d.head.layer}};
        if (d.head.head != darkbert::all_heads) filter.heads = {d.head.head};
        handles.push_back(hooks.add(filter, [](darkbert::HookContext<double>& ctx) {
          // tensor: [B, L, L] for one head, or [B, heads, L, L] for the whole layer
          const bool one_head = ctx.tensor.rank == 3;
          const auto heads = one_head ? 1 : ctx.tensor.shape[1];
          for (darkbert::Index b = 0; b < ctx.batch; ++b)
            for (darkbert::Index h = 0; h < heads; ++h)
              for (darkbert::Index i = 0; i < ctx.length; ++i) {
                double n = 0;
                for (darkbert::Index j = 0; j < ctx.length; ++j)
                  n += ctx.attention_mask[b * ctx.length + j] && (!ctx.causal || j <= i);
                for (darkbert::Index j = 0; j < ctx.length; ++j) {
                  const bool allowed = ctx.attention_mask[b * ctx.length + j] && (!ctx.causal || j <= i);
                  (one_head ? ctx.tensor(b, i, j) : ctx.tensor(b, h, i, j)) = allowed ? 1.0 / n : 0.0;
                }
              }
        }));
      }
      const auto by_hook = model.forward(c.batch, {.hooks = &hooks});
      const auto policies = c.policies<double>();
      const auto by_policy = model.forward(c.batch, {.policies = &policies});
      CHECK(by_hook.attentions == by_policy.attentions);
      CHECK(by_hook.last_hidden_state == by_policy.last_hidden_state);
      for (const auto& [output, path] : c.outputs) {
        const std::string& name = output;
        const auto expected = xt::load_npy<double>(path.string());
        const auto got = darkbert::named_output(by_hook, model, name);
        CHECK_MESSAGE(xt::allclose(got, expected, 1e-9, 1e-9), file.path.filename().string() << "/" << c.name << "/" << name);
      }
      ++checked;
    }
  }
  CHECK(checked >= 10);
}

TEST_CASE("handles remove their hook at end of scope; modifying hooks change the output") {
  const auto model = darkbert::Transformer<float>::load(golden_dir() / "models" / "bert_model");
  const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}});
  const auto plain = model.forward(batch);
  darkbert::HookRegistry<float> hooks;
  {
    auto handle = hooks.add({.pattern = "blocks.0.hook_resid_post"}, [](auto& ctx) {
      for (darkbert::Index i = 0; i < ctx.tensor.size(); ++i) ctx.tensor.data[i] = 0;
    });
    CHECK(hooks.size() == 1);
    const auto zeroed = model.forward(batch, {.hooks = &hooks});
    CHECK(xt::all(xt::equal(xt::view(zeroed.hidden_states, 1), 0.0f)));
    CHECK_FALSE(zeroed.last_hidden_state == plain.last_hidden_state);
  }
  CHECK(hooks.empty());
  CHECK(model.forward(batch, {.hooks = &hooks}).last_hidden_state == plain.last_hidden_state);
  CHECK_THROWS_WITH_AS((void)hooks.add({.pattern = "blocks.0.attention"}, [](auto&) {}), doctest::Contains("is not a hook name"),
                       darkbert::error);
  auto bad_head = hooks.add({.points = {darkbert::HookPoint::pattern}, .heads = {9}}, [](auto&) {});
  CHECK_THROWS_WITH_AS(model.forward(batch, {.hooks = &hooks}), doctest::Contains("head 9 out of range"), darkbert::error);
}

TEST_CASE("a hook may remove itself or add hooks while the registry runs") {
  const auto model = darkbert::Transformer<float>::load(golden_dir() / "models" / "bert_model");
  const auto batch = darkbert::Batch::from_rows({{2, 5, 7, 9}});
  darkbert::HookRegistry<float> hooks;
  int once = 0, after = 0, added = 0;
  std::optional<darkbert::HookHandle> self, later;
  // Fires on the first resid_post point only, then removes itself from inside its own call.
  self.emplace(hooks.add({.points = {darkbert::HookPoint::resid_post}}, [&](auto&) {
    ++once;
    self.reset();
    // Added during the run: fires from the next point on, never on this one.
    later.emplace(hooks.add({.points = {darkbert::HookPoint::resid_post}}, [&](auto&) { ++added; }));
  }));
  auto counter = hooks.add({.points = {darkbert::HookPoint::resid_post}}, [&](auto&) { ++after; });
  model.forward(batch, {.hooks = &hooks});
  const int layers = model.config().num_layers;
  CHECK(once == 1);
  CHECK(after == layers);      // the hook after the removed one still ran at every layer
  CHECK(added == layers - 1);  // from the second layer on
  CHECK(hooks.size() == 2);
}
