// Fuzz target: config.json -> ModelConfig; an accepted config must survive to_json -> from_json unchanged.
#include "darkbert/model/config.hpp"
#include "fuzz_support.hpp"

void fuzz_one(const std::uint8_t* data, std::size_t size) {
  using namespace darkbert;
  const auto json = parse_json({reinterpret_cast<const char*>(data), size}, "config.json");
  const auto c = ModelConfig::from_json(json, "config.json");
  fuzz::check(c.parameter_count() <= ModelConfig::max_parameters, "accepted config within the parameter bound");
  fuzz::check(c.hidden_size % c.num_heads == 0 && c.max_sequence_length() > 0, "accepted config is runnable");
  const auto again = ModelConfig::from_json(c.to_json(), "round trip");
  fuzz::check(again.family == c.family && again.vocab_size == c.vocab_size && again.hidden_size == c.hidden_size &&
                  again.num_layers == c.num_layers && again.num_heads == c.num_heads &&
                  again.intermediate_size == c.intermediate_size && again.max_positions == c.max_positions &&
                  again.labels == c.labels && again.pad_token_id == c.pad_token_id,
              "config round-trips through to_json");
}
