// Tests for study/pattern_cnn.hpp: the area resampling against hand-computed pixels; the CNN trained on
// prototypes scores above a stated F1 on held-out prototypes and agrees with the rules; training is
// deterministic; save/load and the labelled-map folder round-trip; a bad labelled folder is refused with the
// file (and line) named; block is never predicted for a one-segment input; scores and kappa by hand. The GPT-2
// replication's network (eight stride-2 convolutions with batch normalisation) learns the replication's
// prototypes, saves and loads to the same predictions, and is deterministic.
#include <doctest/doctest.h>

#include <omp.h>  // omp_get_max_threads

#include <algorithm>            // std::max
#include <chrono>               // std::chrono::steady_clock
#include <cmath>                // std::abs
#include <filesystem>           // std::filesystem::path
#include <string>               // std::string
#include <vector>               // std::vector
#include <xtensor/xtensor.hpp>  // xt::xtensor

#include "darkbert/io/npy.hpp"
#include "darkbert/study/pattern_cnn.hpp"
#include "test_support.hpp"

using darkbert::Index;
using darkbert::test::message_of;
using darkbert::test::scratch_dir;
namespace study = darkbert::study;

namespace {

// The small set the tests train on (a few seconds): 60 prototypes per class, 30 held out per class.
struct Trained {
  study::PatternTrainingSet set;
  study::PatternCnn cnn;
  double seconds = 0;
};

const Trained& trained() {
  static const Trained t = [] {
    auto set = study::prototype_training_set({.train_per_class = 60, .held_out_per_class = 30, .seed = 5});
    study::PatternCnn cnn(study::paper_pattern_scheme(), {}, 5);
    const auto start = std::chrono::steady_clock::now();
    cnn.train(set.train, {.epochs = 10, .seed = 5});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Trained{std::move(set), std::move(cnn), seconds};
  }();
  return t;
}

// The replication's network on the replication's causal prototypes: 60 per class, 30 held out per class.
const Trained& trained_replication() {
  static const Trained t = [] {
    auto set = study::prototype_training_set({.classes = study::PatternClasses::replication,
                                              .train_per_class = 60,
                                              .held_out_per_class = 30,
                                              .seed = 5,
                                              .maps = {.causal = true},
                                              .input_size = 256});
    study::PatternCnn cnn(study::replication_pattern_scheme(), study::PatternCnnOptions::replication(), 5);
    const auto start = std::chrono::steady_clock::now();
    cnn.train(set.train, {.epochs = 10, .seed = 5});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Trained{std::move(set), std::move(cnn), seconds};
  }();
  return t;
}

}  // namespace

TEST_CASE("area resampling: down by averaging over fractional overlaps, up in blocks") {
  // 4 x 4 -> 2 x 2: the mean of each 2 x 2 block.
  const std::vector<double> m4 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  const auto r = study::resample_attention_map(m4.data(), 4, 4, 2);
  CHECK(r == std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f});
  // 3 x 3 identity -> 2 x 2: pixel 0 covers token 0 and half of token 1, weights (2/3, 1/3, 0).
  const std::vector<double> eye = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  const auto e = study::resample_attention_map(eye.data(), 3, 3, 2);
  CHECK(e[0] == doctest::Approx(5.0 / 9));
  CHECK(e[1] == doctest::Approx(1.0 / 9));  // sum_t A(0, t) A(1, t): only token 1 is shared, (1/3)(1/3)
  CHECK(e[3] == doctest::Approx(5.0 / 9));
  // A row stride larger than n (a padded map) reads only the valid block.
  const std::vector<double> padded = {1, 0, 9, 0, 1, 9, 9, 9, 9};
  CHECK(study::resample_attention_map(padded.data(), 3, 2, 4) ==
        std::vector<float>{1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 1});
  // The CNN's image: rescaled to a maximum of 1.
  const auto image = study::pattern_image(m4.data(), 4, 4, 2);
  CHECK(image[3] == 1.0f);
  CHECK(image[0] == doctest::Approx(3.5 / 13.5));
}

TEST_CASE("the CNN trained on prototypes: held-out F1 and agreement with the rules") {
  const auto& t = trained();
  const auto e = study::evaluate_pattern_cnn(t.cnn, t.set);
  MESSAGE("trained on ", e.training_maps, " prototypes in ", t.seconds, " s; held-out macro F1 ", e.cnn.macro_f1,
          ", rules ", e.rules->macro_f1, ", agreement ", e.agreement->share, " (kappa ", e.agreement->kappa, ")");
  CHECK(e.training_maps == 300);
  CHECK(e.cnn.maps == 150);
  // Measured 0.91 with this small set (60 per class, 10 epochs; the default 300 per class reaches 0.99); the
  // bound leaves room for other compilers' rounding.
  CHECK(e.cnn.macro_f1 >= 0.85);
  for (double f : e.cnn.f1) CHECK(f >= 0.75);
  REQUIRE(e.rules);
  CHECK(e.rules->macro_f1 >= 0.95);
  REQUIRE(e.agreement);
  CHECK(e.agreement->share >= 0.85);  // measured 0.90
  CHECK(e.agreement->kappa >= 0.8);   // measured 0.87
  // The loss went down.
  const auto& loss = t.cnn.training_loss();
  REQUIRE(loss.size() == 10);
  CHECK(loss.back() < 0.5 * loss.front());
}

TEST_CASE("training is deterministic: same seed, same bits; another seed, other weights") {
  const auto set = study::prototype_training_set({.train_per_class = 8, .held_out_per_class = 2, .seed = 9});
  auto train = [&](std::uint64_t seed) {
    study::PatternCnn cnn(study::paper_pattern_scheme(), {}, seed);
    cnn.train(set.train, {.epochs = 2, .batch_size = 16, .seed = seed});
    return cnn.parameters();
  };
  const int threads = omp_get_max_threads();
  const auto a = train(3), b = train(3), c = train(4);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(omp_get_max_threads() == threads);  // the network ran on one thread; the caller's setting is back
}

TEST_CASE("save and load give the same network") {
  const auto& t = trained();
  const auto dir = scratch_dir("pattern_cnn_save");
  t.cnn.save(dir / "cnn");
  const auto back = study::PatternCnn::load(dir / "cnn");
  CHECK(back.parameters() == t.cnn.parameters());
  CHECK(back.scheme() == t.cnn.scheme());
  CHECK(back.training_loss() == t.cnn.training_loss());
  CHECK(back.logits(t.set.held_out.pixels.data(), 7) == t.cnn.logits(t.set.held_out.pixels.data(), 7));
  darkbert::write_file_atomically(dir / "cnn" / "cnn_weights.npy",
                                  darkbert::npy_bytes(xt::xtensor<float, 1>({1.0f, 2.0f})));
  CHECK(message_of([&] { study::PatternCnn::load(dir / "cnn"); }).find("cnn_weights.npy: 2 weights, the network of") !=
        std::string::npos);
}

TEST_CASE("a one-segment input is never called block") {
  const auto& cnn = trained().cnn;
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 5.0f, 0.4f};  // block largest
  CHECK(cnn.choose(logits.data(), true) == static_cast<int>(study::AttentionPattern::block));
  CHECK(cnn.choose(logits.data(), false) == static_cast<int>(study::AttentionPattern::heterogeneous));
}

TEST_CASE("a labelled-map folder round-trips and splits per class") {
  const auto& t = trained();
  const auto dir = scratch_dir("pattern_cnn_labelled");
  study::PatternImages images = t.set.held_out;
  images.labels[3] = -1;  // unlabelled: no line in labels.csv
  study::write_labelled_maps(dir / "set", images);
  const auto back = study::read_labelled_maps(dir / "set", study::paper_pattern_scheme(), 32);
  REQUIRE(back.count() == images.count() - 1);
  CHECK(back.labels[3] == images.labels[4]);
  for (std::size_t k = 0; k < 32 * 32; ++k)
    CHECK(back.image(3)[k] == doctest::Approx(images.image(4)[k]).epsilon(1e-6));
  // Resampled when the folder's size differs from the CNN's.
  CHECK(study::read_labelled_maps(dir / "set", study::paper_pattern_scheme(), 16).size == 16);

  const auto split = study::labelled_training_set(dir / "set", study::paper_pattern_scheme(), 32, 0.2, 1);
  CHECK(split.train.count() + split.held_out.count() == back.count());
  CHECK(split.held_out.count() == 4 * 6 + 5);  // 20% of each class's 30 maps; 5 of the 29 left of block
  CHECK(split.held_out_maps.empty());
  const auto e = study::evaluate_pattern_cnn(t.cnn, split);
  CHECK_FALSE(e.rules.has_value());  // no tokens: the rules cannot run on bare images
  CHECK(e.cnn.maps == split.held_out.count());
}

TEST_CASE("a bad labelled folder is refused, naming the file and line") {
  const auto dir = scratch_dir("pattern_cnn_bad");
  const auto scheme = study::paper_pattern_scheme();
  auto read = [&](const std::filesystem::path& d) {
    return message_of([&] { study::read_labelled_maps(d, scheme, 32); });
  };
  auto maps = [](std::vector<std::size_t> shape) {
    xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
    a.fill(0.25f);
    return darkbert::npy_bytes(a);
  };
  const auto good_labels = "index,class\n0,vertical\n1,block\n";

  CHECK(read(dir / "none") ==
        (dir / "none").string() +
            ": not a folder (a labelled set is a folder with maps.npy [N, S, S] and labels.csv 'index,class')");
  darkbert::test::write_file(dir / "no_maps" / "labels.csv", good_labels);
  CHECK(read(dir / "no_maps") ==
        (dir / "no_maps" / "maps.npy").string() + ": missing (a labelled set needs maps.npy [N, S, S])");
  darkbert::test::write_file(dir / "no_labels" / "maps.npy", maps({2, 8, 8}));
  CHECK(read(dir / "no_labels").find((dir / "no_labels" / "labels.csv").string() + ": missing") == 0);

  darkbert::test::write_file(dir / "shape" / "maps.npy", maps({2, 8, 6}));
  darkbert::test::write_file(dir / "shape" / "labels.csv", good_labels);
  CHECK(read(dir / "shape") ==
        (dir / "shape" / "maps.npy").string() + ": shape (2, 8, 6) is not [N, S, S] (N >= 1 square maps of S >= 2)");
  darkbert::test::write_file(dir / "flat" / "maps.npy", maps({64}));
  darkbert::test::write_file(dir / "flat" / "labels.csv", good_labels);
  CHECK(read(dir / "flat").find("maps.npy: shape (64) is not [N, S, S]") != std::string::npos);

  auto with_labels = [&](const std::string& name, const std::string& csv) {
    darkbert::test::write_file(dir / name / "maps.npy", maps({3, 8, 8}));
    darkbert::test::write_file(dir / name / "labels.csv", csv);
    return read(dir / name);
  };
  const auto csv = [&](const std::string& name) { return (dir / name / "labels.csv").string(); };
  CHECK(
      with_labels("class", "index,class\n0,vertical\n\n2,diagnol\n") ==
      csv("class") +
          ":4: unknown class 'diagnol' (expected one of vertical, diagonal, vertical_diagonal, block, heterogeneous)");
  CHECK(with_labels("header", "map,label\n0,vertical\n") ==
        csv("header") + ":1: header is 'map,label', expected 'index,class'");
  CHECK(with_labels("range", "index,class\n3,vertical\n") ==
        csv("range") + ":2: index 3 is not a map of maps.npy (0..2)");
  CHECK(with_labels("number", "index,class\nx1,vertical\n") ==
        csv("number") + ":2: index 'x1' is not a non-negative integer");
  CHECK(with_labels("twice", "index,class\n1,vertical\n1,block\n") ==
        csv("twice") + ":3: map 1 is labelled twice (first on line 2)");
  CHECK(with_labels("fields", "index,class\n1,vertical,extra\n") ==
        csv("fields") + ":2: expected 'index,class', got '1,vertical,extra'");
  CHECK(with_labels("empty", "index,class\n") == csv("empty") + ": no labelled maps");
  // Windows line ends and spaces are fine.
  CHECK(with_labels("crlf", "index, class\r\n0 , vertical\r\n") == "");

  xt::xarray<float> bad = xt::xarray<float>::from_shape({2, 4, 4});
  bad.fill(0.25f);
  bad(1, 2, 3) = -1.0f;
  darkbert::test::write_file(dir / "negative" / "maps.npy", darkbert::npy_bytes(bad));
  darkbert::test::write_file(dir / "negative" / "labels.csv", "index,class\n0,vertical\n1,block\n");
  CHECK(read(dir / "negative") == (dir / "negative" / "maps.npy").string() +
                                      ": map 1 (labelled on labels.csv line 3) has the value -1 at (2, 3); attention "
                                      "weights are finite and >= 0");
}

TEST_CASE("scores and Cohen's kappa by hand") {
  // Truth 0 0 1 1 2, predicted 0 1 1 1 2: F1(0) = 2/3, F1(1) = 0.8, F1(2) = 1.
  const auto s = study::score_patterns(3, {0, 0, 1, 1, 2}, {0, 1, 1, 1, 2});
  CHECK(s.accuracy == doctest::Approx(0.8));
  CHECK(s.f1[0] == doctest::Approx(2.0 / 3));
  CHECK(s.f1[1] == doctest::Approx(0.8));
  CHECK(s.f1[2] == doctest::Approx(1.0));
  CHECK(s.macro_f1 == doctest::Approx((2.0 / 3 + 0.8 + 1.0) / 3));
  CHECK(s.support == std::vector<std::size_t>{2, 2, 1});
  CHECK(s.confusion[0][1] == 1);
  // p_o = 3/4; marginals (1/2, 1/2) and (1/4, 3/4): p_e = 1/2, kappa = 1/2.
  const auto a = study::pattern_agreement(2, {0, 0, 1, 1}, {0, 1, 1, 1});
  CHECK(a.share == doctest::Approx(0.75));
  CHECK(a.kappa == doctest::Approx(0.5));
  CHECK(study::pattern_agreement(2, {1, 1}, {1, 1}).kappa == 1.0);
  CHECK(study::PatternScores::from_json(s.to_json(), "x").f1 == s.f1);
}

TEST_CASE("the replication's CNN: eight stride-2 convolutions with batch normalisation learn its prototypes") {
  const auto& t = trained_replication();
  const auto& o = t.cnn.options();
  CHECK(o.input_size == 256);
  CHECK(o.strides == std::vector<Index>(8, 2));
  // Per convolution a weight [O, C, 3, 3], a gain and a shift [O] (no bias); the linear layer reads 8 features.
  Index expected = 0, in = 1;
  for (Index out : o.channels) expected += out * in * 9 + 2 * out, in = out;
  expected += 4 * 8 + 4;
  CHECK(static_cast<Index>(t.cnn.parameters().size()) == expected);
  CHECK(t.cnn.running_statistics().size() == 2 * (4 + 4 + 8 * 6));

  const auto e = study::evaluate_pattern_cnn(t.cnn, t.set);
  MESSAGE("replication CNN: trained on ", e.training_maps, " prototypes in ", t.seconds, " s; held-out macro F1 ",
          e.cnn.macro_f1, " (per class ", e.cnn.f1[0], ", ", e.cnn.f1[1], ", ", e.cnn.f1[2], ", ", e.cnn.f1[3],
          "), rules ", e.rules->macro_f1, ", agreement ", e.agreement->share);
  CHECK(e.training_maps == 240);
  CHECK(e.cnn.maps == 120);
  CHECK(e.held_out_set.find("causal GPT-2 replication") != std::string::npos);
  // Measured 0.94 (per class 1.00, 0.90, 0.89, 0.98); the bound leaves room for other compilers' rounding.
  CHECK(e.cnn.macro_f1 >= 0.85);
  for (double f : e.cnn.f1) CHECK(f >= 0.75);
  REQUIRE(e.rules);
  CHECK(e.rules->macro_f1 >= 0.95);  // the replication's rules on the same maps
  const auto& loss = t.cnn.training_loss();
  REQUIRE(loss.size() == 10);
  CHECK(loss.back() < 0.5 * loss.front());
  // Inference normalises with the running statistics: a map's logits do not depend on the batch around it
  // (with the batch's statistics they would move by whole units). Up to rounding: built with clang, one
  // image alone and the same image among five differ in their last bits.
  const auto batch = t.cnn.logits(t.set.held_out.pixels.data(), 5);
  const auto alone = t.cnn.logits(t.set.held_out.image(3), 1);
  REQUIRE(alone.size() == 4);
  double worst = 0;
  for (std::size_t c = 0; c < 4; ++c)
    worst = std::max(worst, std::abs(static_cast<double>(batch[12 + c]) - alone[c]) / (1 + std::abs(alone[c])));
  CHECK_MESSAGE(worst <= 1e-5, "logits of map 3 alone and in a batch of five differ by " << worst);
}

TEST_CASE("the replication's CNN saves and loads to the same predictions; one seed, one set of bits") {
  const auto& t = trained_replication();
  const auto dir = scratch_dir("pattern_cnn_replication_save");
  t.cnn.save(dir / "cnn");
  CHECK(std::filesystem::exists(dir / "cnn" / "cnn_running_statistics.npy"));
  const auto back = study::PatternCnn::load(dir / "cnn");
  CHECK(back.options().architecture == study::PatternCnnArchitecture::replication);
  CHECK(back.options().input_size == 256);
  CHECK(back.parameters() == t.cnn.parameters());
  CHECK(back.running_statistics() == t.cnn.running_statistics());
  CHECK(back.scheme() == study::replication_pattern_scheme());
  const auto n = static_cast<Index>(t.set.held_out.count());
  CHECK(back.logits(t.set.held_out.pixels.data(), n) == t.cnn.logits(t.set.held_out.pixels.data(), n));
  CHECK(back.predict(t.set.held_out) == t.cnn.predict(t.set.held_out));
  darkbert::write_file_atomically(dir / "cnn" / "cnn_running_statistics.npy",
                                  darkbert::npy_bytes(xt::xtensor<float, 1>({1.0f, 2.0f})));
  CHECK(message_of([&] { study::PatternCnn::load(dir / "cnn"); })
            .find("cnn_running_statistics.npy: 2 running statistics, the network of") != std::string::npos);

  // Determinism: 9 labelled images in batches of 4 (the last batch of one joins the one before).
  auto set = study::prototype_training_set({.classes = study::PatternClasses::replication,
                                            .train_per_class = 2,
                                            .held_out_per_class = 1,
                                            .seed = 9,
                                            .maps = {.causal = true},
                                            .input_size = 256});
  set.train.add(std::vector<float>(set.train.image(0), set.train.image(0) + 256 * 256), 0, true);
  auto train = [&](std::uint64_t seed) {
    study::PatternCnn cnn(study::replication_pattern_scheme(), study::PatternCnnOptions::replication(), seed);
    cnn.train(set.train, {.epochs = 2, .batch_size = 4, .seed = seed});
    auto bits = cnn.parameters();
    bits.insert(bits.end(), cnn.running_statistics().begin(), cnn.running_statistics().end());
    return bits;
  };
  const auto a = train(3), b = train(3), c = train(4);
  CHECK(a == b);
  CHECK(a != c);
  study::PatternCnn cnn(study::replication_pattern_scheme(), study::PatternCnnOptions::replication(), 1);
  CHECK(message_of([&] { cnn.train(set.train, {.batch_size = 1}); }) ==
        "PatternCnn::train: batch normalisation needs batches of two images or more (batch size 1, 9 labelled "
        "images)");
  CHECK(message_of([&] { cnn.train(study::prototype_training_set({.train_per_class = 1, .held_out_per_class = 1, .input_size = 256}).train); })
            .find("the network predicts those of 'gpt2_replication'") != std::string::npos);
}
