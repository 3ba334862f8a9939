// Fuzz target: a whole checkpoint folder (config.json and model.safetensors, joined by fuzz_support's file
// separator) loaded as Transformer<float>, then one forward pass on a small batch whose ids come from the
// input's last bytes. Shape mismatches between config and tensors, NaN weights and odd head layouts all
// have to end in a darkbert::error or a finite result.
#include <vector>  // std::vector

#include "darkbert/model/transformer.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  static const auto dir = fuzz::scratch("forward");
  const auto files = fuzz::split_files(data, size, 3);
  fuzz::put(dir / "config.json", files[0]);
  fuzz::put(dir / "model.safetensors", files[1]);
  const auto model = Transformer<float>::load(dir);
  const auto& c = model.config();
  const int length = std::min(c.max_sequence_length(), 5);
  std::vector<std::vector<int>> rows(2);
  for (int i = 0; i < length; ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const unsigned byte = k < files[2].size() ? static_cast<unsigned char>(files[2][k]) : 1u;
    rows[0].push_back(static_cast<int>(byte % static_cast<unsigned>(c.vocab_size)));
    if (i < 2) rows[1].push_back(static_cast<int>((byte * 7u) % static_cast<unsigned>(c.vocab_size)));
  }
  const auto batch = Batch::from_rows(rows, c.pad_token_id >= 0 ? c.pad_token_id : 0);
  const auto out = model.forward(batch);
  // No finiteness property: finite but huge weights (1e38) legitimately overflow float32 to inf/NaN.
  fuzz::check(out.last_hidden_state.size() == static_cast<std::size_t>(2 * length * c.hidden_size),
              "one hidden state per token");
}
