// BERT's segment pairs and masking, and GPT-2's windows, on a synthetic corpus whose token ids say which
// document and sentence they come from (id = 1000·document + 10·sentence + position).
#include <doctest/doctest.h>

#include <set>     // std::set
#include <vector>  // std::vector

#include "darkbert/train/causal_lm_data.hpp"
#include "darkbert/train/masked_lm_data.hpp"
#include "test_support.hpp"

namespace {

darkbert::TokenizedCorpus synthetic_corpus(int documents, int sentences, int length) {
  darkbert::TokenizedCorpus c;
  c.sentence_starts = {0};
  c.document_starts = {0};
  for (int d = 0; d < documents; ++d) {
    for (int s = 0; s < sentences; ++s) {
      for (int t = 0; t < length; ++t) c.tokens.push_back(1000 * (d + 1) + 10 * s + t);
      c.sentence_starts.push_back(static_cast<std::int64_t>(c.tokens.size()));
    }
    c.document_starts.push_back(static_cast<std::int64_t>(c.sentence_starts.size() - 1));
  }
  return c;
}

int document_of(int id) { return id / 1000 - 1; }

// Segment pairs of a 30-document synthetic corpus with every pair as one batch row (key = 100 + row), and
// a vocabulary whose specials sit below the corpus ids.
struct MaskingSetup {
  darkbert::TokenizedCorpus corpus = synthetic_corpus(30, 10, 6);
  std::vector<darkbert::SegmentPair> pairs = darkbert::make_segment_pairs(corpus, {.max_length = 64}, 3);
  darkbert::MaskedLmVocabulary vocab{.cls = 1, .sep = 2, .mask = 3, .pad = 0, .size = 900};
  std::vector<std::size_t> rows;
  std::vector<std::uint64_t> keys;
  MaskingSetup() {
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      rows.push_back(i);
      keys.push_back(100 + i);
    }
  }
};

}  // namespace

TEST_CASE("segment pairs fit, come from whole sentences, and half of them have a random B") {
  const auto corpus = synthetic_corpus(40, 12, 5);
  const darkbert::SegmentPairOptions options{.max_length = 32};
  const auto pairs = darkbert::make_segment_pairs(corpus, options, 7);
  REQUIRE(pairs.size() > 50);
  int random_next = 0;
  for (const auto& p : pairs) {
    CHECK(p.a.size() + p.b.size() <= 29);
    REQUIRE(!p.a.empty());
    REQUIRE(!p.b.empty());
    // A lies in one document; a true continuation B in the same one, a random B in another.
    const int doc = document_of(p.a.front());
    for (int id : p.a) CHECK(document_of(id) == doc);
    if (p.random_next) {
      ++random_next;
      CHECK(document_of(p.b.front()) != doc);
    } else {
      for (int id : p.b) CHECK(document_of(id) == doc);
      CHECK(p.b.front() > p.a.back());  // B follows A
    }
  }
  const double share = static_cast<double>(random_next) / static_cast<double>(pairs.size());
  CHECK(share > 0.35);
  CHECK(share < 0.65);
  // Same seed, same pairs; another seed, other pairs.
  const auto again = darkbert::make_segment_pairs(corpus, options, 7);
  const auto other = darkbert::make_segment_pairs(corpus, options, 8);
  REQUIRE(again.size() == pairs.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) CHECK((again[i].a == pairs[i].a && again[i].b == pairs[i].b));
  bool differs = other.size() != pairs.size();
  for (std::size_t i = 0; !differs && i < pairs.size(); ++i) differs = other[i].a != pairs[i].a;
  CHECK(differs);
  CHECK(darkbert::test::message_of([&] { darkbert::make_segment_pairs(synthetic_corpus(1, 3, 4), options, 1); })
            .find("at least 2 documents") != std::string::npos);
}

TEST_CASE("masking: 15% of the non-special tokens, 80/10/10, keyed per example") {
  const MaskingSetup setup;
  const auto& pairs = setup.pairs;
  const auto& vocab = setup.vocab;
  const auto& rows = setup.rows;
  const auto& keys = setup.keys;
  darkbert::MaskedLmBatch mb;
  darkbert::make_masked_lm_batch(pairs, rows, keys, vocab, {.max_predictions = 1000}, 11, mb);
  const auto& batch = mb.batch;
  REQUIRE(batch.batch_size == static_cast<darkbert::Index>(pairs.size()));
  long masked = 0, kept = 0, randomised = 0, candidates = 0;
  std::size_t position = 0;
  for (darkbert::Index b = 0; b < batch.batch_size; ++b) {
    const auto& p = pairs[static_cast<std::size_t>(b)];
    CHECK(batch.id(b, 0) == 1);
    CHECK(mb.labels.next_sentence[static_cast<std::size_t>(b)] == (p.random_next ? 1 : 0));
    const long n = static_cast<long>(p.a.size() + p.b.size());
    candidates += n;
    long in_row = 0;
    for (darkbert::Index i = 0; i < batch.length; ++i) {
      const int label = mb.labels.tokens[static_cast<std::size_t>(b * batch.length + i)];
      if (label == darkbert::kernels::ignore_index) continue;
      ++in_row;
      REQUIRE(position < mb.positions.size());
      CHECK(mb.positions[position] == std::pair<darkbert::Index, darkbert::Index>{b, i});
      ++position;
      CHECK(label >= 1000);  // never a special token
      const int id = batch.id(b, i);
      if (id == 3) ++masked;
      else if (id == label) ++kept;
      else ++randomised;
    }
    CHECK(in_row == std::max(1L, std::lround(0.15 * static_cast<double>(n))));
  }
  CHECK(position == mb.positions.size());
  const double total = static_cast<double>(masked + kept + randomised);
  CHECK(total == doctest::Approx(0.15 * static_cast<double>(candidates)).epsilon(0.05));
  CHECK(masked / total == doctest::Approx(0.8).epsilon(0.06));
  CHECK(kept / total == doctest::Approx(0.1).epsilon(0.35));
  CHECK(randomised / total == doctest::Approx(0.1).epsilon(0.35));

  // An example's masks depend on its key only, not on the rest of the batch.
  darkbert::MaskedLmBatch alone;
  const std::size_t row[] = {5};
  const std::uint64_t key[] = {105};
  darkbert::make_masked_lm_batch(pairs, row, key, vocab, {.max_predictions = 1000}, 11, alone);
  for (darkbert::Index i = 0; i < alone.batch.length; ++i) {
    CHECK(alone.batch.id(0, i) == batch.id(5, i));
    CHECK(alone.labels.tokens[static_cast<std::size_t>(i)] == mb.labels.tokens[static_cast<std::size_t>(5 * batch.length + i)]);
  }
}

TEST_CASE("masking at another rate: round(rate) of each example's tokens, up to max_predictions") {
  const MaskingSetup s;
  for (const int cap : {1000, 10}) {
    CAPTURE(cap);
    darkbert::MaskedLmBatch mb;
    darkbert::make_masked_lm_batch(s.pairs, s.rows, s.keys, s.vocab, {.mask_prob = 0.4, .max_predictions = cap}, 11, mb);
    std::vector<long> per_row(s.pairs.size(), 0);
    for (const auto& [b, i] : mb.positions) ++per_row[static_cast<std::size_t>(b)];
    for (std::size_t r = 0; r < s.pairs.size(); ++r) {
      const auto n = static_cast<double>(s.pairs[r].a.size() + s.pairs[r].b.size());
      CHECK(per_row[r] == std::min<long>(cap, std::max(1L, std::lround(0.4 * n))));
    }
  }
}

TEST_CASE("causal windows join documents with the end-of-text token") {
  const auto corpus = synthetic_corpus(3, 2, 4);
  const auto windows = darkbert::TokenWindows::from_corpus(corpus, 7, 5);
  CHECK(windows.stream.size() == 3 * (8 + 1));
  CHECK(windows.count() == 5);
  CHECK(windows.stream[8] == 7);
  CHECK(windows.stream[17] == 7);
  darkbert::CausalLmBatch cb;
  const std::size_t rows[] = {3, 1};
  darkbert::make_causal_lm_batch(windows, rows, cb);
  CHECK(cb.batch.batch_size == 2);
  CHECK(cb.batch.length == 5);
  CHECK(cb.batch.id(0, 0) == windows.stream[15]);
  CHECK(cb.labels.tokens == cb.batch.input_ids);
  CHECK(darkbert::test::message_of([&] { darkbert::TokenWindows::from_corpus(corpus, 7, 100); }).find("fewer than one window") !=
        std::string::npos);
}
