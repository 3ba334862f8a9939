#pragma once
/// @file
/// §3.1's second classifier, as the paper built it (and as the GPT-2 replication rebuilt it, below): a convolutional network (8 convolutions of 3 x 3 with
/// ReLU, then a linear layer) that reads an attention map as an image and names its pattern class. The
/// paper trained it on ~400 hand-labelled maps; here it trains with darkbert's autodiff on labelled maps
/// from a folder (a user's hand-labelled set) or, by default, on seeded synthetic prototypes
/// (study/pattern_prototypes.hpp), and reports F1 on held-out labelled maps and its agreement with the rule
/// classifier (study/pattern_rules.hpp).
///
/// The image of a map (pattern_image): the valid n x n block resampled to S x S (S = 32 by default) by area
/// averaging — output pixel (p, q) is the mean of the map over the square [p n/S, (p+1) n/S) x
/// [q n/S, (q+1) n/S) of the token grid, tokens cut where a pixel boundary falls inside them — then divided
/// by its maximum, so every image spans [0, 1] the way a heatmap with its own colour scale does (what a
/// person labelling maps sees). Longer maps are averaged down (a one-token diagonal stays a line one pixel
/// wide, fainter by at most n/S before the rescaling), shorter ones are blown up in blocks.
///
/// The network (defaults; PatternCnnOptions): input [B, 1, 32, 32]; eight convolutions, 3 x 3, zero padding
/// 1, each followed by ReLU, with 4, 4, 8, 8, 8, 8, 8, 8 output channels and strides 2, 1, 2, 1, 2, 1, 2, 1
/// (32 -> 16 -> 16 -> 8 -> 8 -> 4 -> 4 -> 2 -> 2 pixels: the strides do the pooling, so the last
/// layers see the whole map); flattened [B, 32]; a linear layer to one logit per class. 3,000 parameters
/// or so: the classes differ in coarse geometry (columns, a diagonal line, two squares), and a small net
/// trains in seconds on two cores with darkbert's plain-loop convolution.
///
/// The GPT-2 replication's network (PatternCnnOptions::replication(), architecture = replication): "8
/// convolutional layers, ReLU activation, stride as 2, and batch normalization" — input [B, 1, 256, 256];
/// eight convolutions, 3 x 3, stride 2, zero padding 1, no bias, each followed by batch normalisation
/// (autodiff::batch_norm: batch statistics in training, running ones, momentum 0.1, in inference) and ReLU,
/// with 4, 4, 8, 8, 8, 8, 8, 8 output channels (256 -> 128 -> 64 -> 32 -> 16 -> 8 -> 4 -> 2 -> 1 pixels:
/// 256 = 2^8 is the input size at which every stride halves the map and the last convolution sees it whole);
/// flattened [B, 8]; a linear layer. About 2,500 parameters; the replication does not give its widths,
/// these are the paper network's. The 256 x 256 input costs ~13 times the paper network's 32 x 32 per map.
/// Saved with its running statistics (cnn_running_statistics.npy beside cnn_weights.npy).
///
/// Training: cross-entropy, AdamW (decoupled weight decay on the weights, not the biases; the update of
/// train/optimizer.hpp, written here for a flat parameter vector since that optimizer walks a
/// Transformer's parameters), learning rate warmed up linearly over the first 5% of the steps and decayed
/// linearly to 0, mini-batches in a seeded order per epoch, He-normal initialisation from the seed. Every
/// step is a fixed sequence of loops (kernels/conv2d.hpp sums every element in a stated order, whatever
/// the thread count), so one seed gives the same bits on every run. Networks on inputs under 128 x 128
/// run on the calling thread, larger ones on the process's threads (see SingleThreadedOpenMp).
///
/// A labelled-map folder (read_labelled_maps / write_labelled_maps):
/// @code
/// maps.npy     float32 or float64, shape [N, S, S]: N attention maps, each already cut to its valid block
///              and resampled to S x S (pattern_image, or any resampling of your own); other sizes than the
///              CNN's input are resampled again by area averaging; each map is rescaled to its maximum
/// labels.csv   header "index,class", then one line per labelled map: "17,vertical_diagonal"
///              (index into maps.npy from 0; class one of the scheme's names — the paper's vertical,
///              diagonal, vertical_diagonal, block, heterogeneous, or the replication's diagonal, block,
///              overall, majority_first_sentence); maps without a line are unlabelled and skipped
/// @endcode
///
/// @code
/// auto set = darkbert::study::prototype_training_set({.train_per_class = 200, .held_out_per_class = 60, .seed = 1});
/// darkbert::study::PatternCnn cnn(darkbert::study::paper_pattern_scheme(), {}, /*seed=*/1);
/// cnn.train(set.train, {.epochs = 8});
/// auto evaluation = darkbert::study::evaluate_pattern_cnn(cnn, set);   // F1, agreement with the rules
/// @endcode

#include <omp.h>  // omp_get_max_threads, omp_set_num_threads

#include <algorithm>            // std::max, std::min, std::max_element, std::fill
#include <cctype>               // std::isspace
#include <charconv>             // std::from_chars
#include <cmath>                // std::sqrt, std::pow, std::isfinite
#include <cstddef>              // std::size_t
#include <cstdint>              // std::uint64_t
#include <filesystem>           // std::filesystem::path, exists
#include <nlohmann/json.hpp>    // nlohmann::json
#include <optional>             // std::optional
#include <random>               // std::mt19937_64
#include <sstream>              // std::ostringstream
#include <string>               // std::string
#include <utility>              // std::move
#include <vector>               // std::vector
#include <xtensor/xarray.hpp>   // xt::xarray (maps.npy)
#include <xtensor/xtensor.hpp>  // xt::xtensor

#include "darkbert/analysis/classification_metrics.hpp"  // darkbert::ConfusionMatrix
#include "darkbert/autodiff/functions.hpp"               // conv2d, linear, cross_entropy, activation
#include "darkbert/autodiff/tape.hpp"                    // darkbert::autodiff::Tape
#include "darkbert/core/atomic_file.hpp"                 // darkbert::write_file_atomically
#include "darkbert/core/detail/text_file.hpp"            // detail::read_text_file
#include "darkbert/core/error.hpp"                       // darkbert::require, darkbert::fail
#include "darkbert/data/seeded_shuffle.hpp"              // darkbert::seeded_permutation
#include "darkbert/io/json.hpp"                          // darkbert::read_json_file, json_integer
#include "darkbert/io/npy.hpp"                           // darkbert::read_npy, write_npy
#include "darkbert/study/pattern_prototypes.hpp"         // pattern_prototypes, LabelledPatternMap
#include "darkbert/study/pattern_rules.hpp"              // PatternScheme, PatternRules

namespace darkbert::study {

// ------------------------------------------------------------------ images of attention maps

/// The valid n x n block of a map (rows `stride` elements apart) resampled to size x size by area
/// averaging (see the file comment); values keep their scale (a uniform map stays 1/n). [size, size].
template <class T>
std::vector<float> resample_attention_map(const T* map, Index stride, Index n, Index size) {
  require(map != nullptr && n >= 1 && stride >= n && size >= 1, "resample_attention_map: bad map (n = ", n,
          ", row stride ", stride, ") or size ", size);
  // Pixel p covers tokens [p n/size, (p+1) n/size): its (token, weight) pairs, weight = overlap / pixel width
  // (they sum to 1). Plain loops over these few pairs: no BLAS call (and no thread team) per small map.
  struct Tap {
    Index token;
    double weight;
  };
  std::vector<std::vector<Tap>> taps(static_cast<std::size_t>(size));
  const double width = static_cast<double>(n) / static_cast<double>(size);
  for (Index p = 0; p < size; ++p) {
    const double lo = static_cast<double>(p) * width, hi = static_cast<double>(p + 1) * width;
    for (Index t = static_cast<Index>(lo); t < n && static_cast<double>(t) < hi; ++t) {
      const double overlap = std::min(hi, static_cast<double>(t + 1)) - std::max(lo, static_cast<double>(t));
      if (overlap > 0) taps[static_cast<std::size_t>(p)].push_back({t, overlap / width});
    }
  }
  // rows [size, n] = A map, then out [size, size] = rows A^T.
  std::vector<double> rows(static_cast<std::size_t>(size * n), 0.0);
  for (Index p = 0; p < size; ++p)
    for (const auto& [t, w] : taps[static_cast<std::size_t>(p)])
      for (Index j = 0; j < n; ++j)
        rows[static_cast<std::size_t>(p * n + j)] += w * static_cast<double>(map[t * stride + j]);
  std::vector<float> out(static_cast<std::size_t>(size * size));
  for (Index p = 0; p < size; ++p)
    for (Index q = 0; q < size; ++q) {
      double v = 0;
      for (const auto& [t, w] : taps[static_cast<std::size_t>(q)]) v += w * rows[static_cast<std::size_t>(p * n + t)];
      out[static_cast<std::size_t>(p * size + q)] = static_cast<float>(v);
    }
  return out;
}

/// What the CNN reads: the resampled map divided by its maximum (all zeros stays zeros). [size, size].
template <class T>
std::vector<float> pattern_image(const T* map, Index stride, Index n, Index size) {
  auto image = resample_attention_map(map, stride, n, size);
  const float top = *std::max_element(image.begin(), image.end());
  if (top > 0)
    for (float& v : image) v /= top;
  return image;
}

/// A set of CNN input images with their labels.
struct PatternImages {
  PatternScheme scheme = paper_pattern_scheme();  ///< what the labels index
  Index size = 32;                                ///< S
  std::vector<float> pixels;                      ///< [count, S, S]
  std::vector<int> labels;                        ///< [count]: class index, -1 = unlabelled
  std::vector<char> two_segments;                 ///< [count]: whether two-segment classes (block) may be predicted
  std::string source;                             ///< where the maps come from, in one phrase

  /// Number of images.
  std::size_t count() const { return labels.size(); }
  /// Image k.
  const float* image(std::size_t k) const { return pixels.data() + k * static_cast<std::size_t>(size * size); }
  /// Appends one image (size x size values) with its label and two-segment flag.
  void add(const std::vector<float>& image, int label, bool two) {
    require(static_cast<Index>(image.size()) == size * size, "pattern images: image of ", image.size(),
            " values, expected ", size, " x ", size);
    pixels.insert(pixels.end(), image.begin(), image.end());
    labels.push_back(label);
    two_segments.push_back(two ? 1 : 0);
  }
};

/// The images of labelled maps (prototypes), in order.
inline PatternImages images_of(const std::vector<LabelledPatternMap>& maps, Index size, std::string source,
                               PatternScheme scheme = paper_pattern_scheme()) {
  PatternImages out;
  out.scheme = std::move(scheme);
  out.size = size;
  out.source = std::move(source);
  out.pixels.reserve(maps.size() * static_cast<std::size_t>(size * size));
  for (const auto& m : maps) {
    const detail::PatternLayout layout(m.length, m.causal, m.tokens);
    out.add(pattern_image(m.weights.data(), m.length, m.length, size), m.label, layout.two_segments);
  }
  return out;
}

namespace detail {

/// Runs the CNN on the calling thread only, for the guard's lifetime, when `one` (the thread's OpenMP
/// thread count is restored after). autodiff::conv2d opens a parallel loop per call; on 32 x 32 images
/// that costs more than it gains — measured on two shared cores: 1.1 ms per training image on one thread,
/// 3.3 ms on two — while the replication's 256 x 256 CNN trains 1.3 times faster on two (docs/performance.md).
class SingleThreadedOpenMp {
 public:
  explicit SingleThreadedOpenMp(bool one) : threads_(omp_get_max_threads()) {
    if (one) omp_set_num_threads(1);
  }
  ~SingleThreadedOpenMp() { omp_set_num_threads(threads_); }
  SingleThreadedOpenMp(const SingleThreadedOpenMp&) = delete;
  SingleThreadedOpenMp& operator=(const SingleThreadedOpenMp&) = delete;

 private:
  int threads_;
};

inline std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

inline nlohmann::json scheme_to_json(const PatternScheme& s) {
  return {{"name", s.name},
          {"names", s.names},
          {"labels", s.labels},
          {"two_segments", s.two_segments},
          {"definitions", s.definitions}};
}

inline PatternScheme scheme_from_json(const nlohmann::json& parent, const std::string& where) {
  try {
    const nlohmann::json& j = parent.at("scheme");
    PatternScheme s{j.at("name").get<std::string>(), j.at("names").get<std::vector<std::string>>(),
                    j.at("labels").get<std::vector<std::string>>(), j.at("two_segments").get<std::vector<bool>>(),
                    {}};
    if (j.contains("definitions")) {
      s.definitions = j.at("definitions").get<std::vector<std::string>>();
    } else {  // written before schemes carried definitions: the built-in scheme's, else none
      for (const auto known : {PatternClasses::paper, PatternClasses::replication})
        if (const auto k = pattern_scheme(known); k.name == s.name && k.names == s.names) s.definitions = k.definitions;
      if (s.definitions.empty()) s.definitions.assign(s.names.size(), "");
    }
    s.check();
    return s;
  } catch (const nlohmann::json::exception& e) {
    fail(where, ": pattern scheme: ", e.what());
  }
}

}  // namespace detail

/// Reads a labelled-map folder (format in the file comment) as CNN images of `size` x `size`. Errors name
/// the file, and for labels.csv the line.
inline PatternImages read_labelled_maps(const std::filesystem::path& dir, const PatternScheme& scheme, Index size) {
  const auto maps_path = dir / "maps.npy", labels_path = dir / "labels.csv";
  std::error_code ec;
  require(std::filesystem::is_directory(dir, ec), dir.string(),
          ": not a folder (a labelled set is a folder with maps.npy [N, S, S] and labels.csv 'index,class')");
  require(std::filesystem::exists(maps_path, ec), maps_path.string(),
          ": missing (a labelled set needs maps.npy [N, S, S])");
  require(std::filesystem::exists(labels_path, ec), labels_path.string(),
          ": missing (a labelled set needs labels.csv with the header 'index,class')");
  const xt::xarray<double> maps = read_npy<double>(maps_path);
  const auto& shape = maps.shape();
  std::string shape_text;
  for (auto d : shape) shape_text += (shape_text.empty() ? "" : ", ") + std::to_string(d);
  require(shape.size() == 3 && shape[1] == shape[2] && shape[1] >= 2 && shape[0] >= 1, maps_path.string(), ": shape (",
          shape_text, ") is not [N, S, S] (N >= 1 square maps of S >= 2)");
  const std::size_t count = shape[0];
  const Index side = static_cast<Index>(shape[1]);

  std::vector<int> labels(count, -1);
  std::vector<std::size_t> line_of(count, 0);
  const std::string text = darkbert::detail::read_text_file(labels_path, "labels file");
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  bool header = false;
  std::size_t labelled = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = labels_path.string() + ":" + std::to_string(number);
    const std::string content = detail::trim(line);
    if (content.empty()) continue;
    const auto comma = content.find(',');
    if (!header) {
      require(comma != std::string::npos && detail::trim(content.substr(0, comma)) == "index" &&
                  detail::trim(content.substr(comma + 1)) == "class",
              where, ": header is '", content, "', expected 'index,class'");
      header = true;
      continue;
    }
    require(comma != std::string::npos && content.find(',', comma + 1) == std::string::npos, where,
            ": expected 'index,class', got '", content, "'");
    const std::string index_text = detail::trim(content.substr(0, comma));
    std::size_t index = 0;
    const auto parsed = std::from_chars(index_text.data(), index_text.data() + index_text.size(), index);
    require(parsed.ec == std::errc() && parsed.ptr == index_text.data() + index_text.size() && !index_text.empty(),
            where, ": index '", index_text, "' is not a non-negative integer");
    require(index < count, where, ": index ", index, " is not a map of ", maps_path.filename().string(), " (0..",
            count - 1, ")");
    require(labels[index] < 0, where, ": map ", index, " is labelled twice (first on line ", line_of[index], ")");
    labels[index] = scheme.index_of(detail::trim(content.substr(comma + 1)), where);
    line_of[index] = number;
    ++labelled;
  }
  require(header, labels_path.string(), ": empty (expected the header 'index,class')");
  require(labelled > 0, labels_path.string(), ": no labelled maps");

  PatternImages out;
  out.scheme = scheme;
  out.size = size;
  out.source = std::to_string(labelled) + " labelled maps of " + std::to_string(count) + " in " + dir.string();
  std::vector<double> map(static_cast<std::size_t>(side * side));
  for (std::size_t k = 0; k < count; ++k) {
    if (labels[k] < 0) continue;
    for (Index e = 0; e < side * side; ++e) {
      const double v = maps.data()[k * static_cast<std::size_t>(side * side) + static_cast<std::size_t>(e)];
      require(std::isfinite(v) && v >= 0, maps_path.string(), ": map ", k, " (labelled on ",
              labels_path.filename().string(), " line ", line_of[k], ") has the value ", v, " at (", e / side, ", ",
              e % side, "); attention weights are finite and >= 0");
      map[static_cast<std::size_t>(e)] = v;
    }
    out.add(pattern_image(map.data(), side, side, size), labels[k], true);
  }
  return out;
}

/// Writes the labelled images as a labelled-map folder (maps.npy [N, S, S] float32, labels.csv): a set a
/// user can look at, relabel by hand and read back with read_labelled_maps.
inline void write_labelled_maps(const std::filesystem::path& dir, const PatternImages& images) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
  const std::size_t n = images.count();
  require(images.pixels.size() == n * static_cast<std::size_t>(images.size * images.size), dir.string(),
          ": pattern images hold ", images.pixels.size(), " values for ", n, " images of ", images.size, " x ",
          images.size);
  xt::xtensor<float, 3> maps = xt::xtensor<float, 3>::from_shape(
      {n, static_cast<std::size_t>(images.size), static_cast<std::size_t>(images.size)});
  std::copy(images.pixels.begin(), images.pixels.end(), maps.begin());
  write_npy(dir / "maps.npy", maps);
  std::string csv = "index,class\n";
  for (std::size_t k = 0; k < n; ++k)
    if (images.labels[k] >= 0)
      csv += std::to_string(k) + "," + images.scheme.names[static_cast<std::size_t>(images.labels[k])] + "\n";
  write_file_atomically(dir / "labels.csv", csv);
}

// ------------------------------------------------------------------ scores

/// How well predictions match labels: accuracy, F1 per class and macro F1 (scikit-learn's conventions:
/// macro over the classes present in the labels or the predictions), the confusion matrix.
struct PatternScores {
  std::size_t maps = 0;                             ///< maps scored
  double accuracy = 0;                              ///< share correct
  double macro_f1 = 0;                              ///< mean F1 over the classes seen
  std::vector<double> f1;                           ///< [classes], 0 for a class never seen
  std::vector<std::size_t> support;                 ///< [classes]: maps labelled with each class
  std::vector<std::vector<std::size_t>> confusion;  ///< [label][prediction]

  /// As JSON (every number).
  nlohmann::json to_json() const {
    return {{"maps", maps}, {"accuracy", accuracy}, {"macro_f1", macro_f1},
            {"f1", f1},     {"support", support},   {"confusion", confusion}};
  }
  /// Reads to_json's output; `where` names the file.
  static PatternScores from_json(const nlohmann::json& j, const std::string& where) {
    try {
      PatternScores s;
      s.maps = j.at("maps").get<std::size_t>();
      s.accuracy = j.at("accuracy").get<double>();
      s.macro_f1 = j.at("macro_f1").get<double>();
      s.f1 = j.at("f1").get<std::vector<double>>();
      s.support = j.at("support").get<std::vector<std::size_t>>();
      s.confusion = j.at("confusion").get<std::vector<std::vector<std::size_t>>>();
      return s;
    } catch (const nlohmann::json::exception& e) {
      fail(where, ": scores: ", e.what());
    }
  }
};

/// Scores `predicted` against `truth` (class indices in [0, classes)).
inline PatternScores score_patterns(int classes, const std::vector<int>& truth, const std::vector<int>& predicted) {
  require(truth.size() == predicted.size() && !truth.empty(), "score_patterns: ", truth.size(), " labels and ",
          predicted.size(), " predictions");
  ConfusionMatrix cm(truth, predicted);
  PatternScores s;
  s.maps = truth.size();
  s.accuracy = cm.accuracy();
  s.macro_f1 = cm.f1_macro();
  s.f1.resize(static_cast<std::size_t>(classes));
  s.support.assign(static_cast<std::size_t>(classes), 0);
  s.confusion.assign(static_cast<std::size_t>(classes), std::vector<std::size_t>(static_cast<std::size_t>(classes), 0));
  for (std::size_t k = 0; k < truth.size(); ++k) {
    require(truth[k] >= 0 && truth[k] < classes && predicted[k] >= 0 && predicted[k] < classes,
            "score_patterns: class index outside [0, ", classes, ") at map ", k);
    ++s.support[static_cast<std::size_t>(truth[k])];
    ++s.confusion[static_cast<std::size_t>(truth[k])][static_cast<std::size_t>(predicted[k])];
  }
  for (int c = 0; c < classes; ++c) s.f1[static_cast<std::size_t>(c)] = cm.f1_of(c);
  return s;
}

/// How often two classifiers give the same class: the share of maps and Cohen's kappa (agreement beyond
/// what two classifiers with the same class frequencies reach by chance: (p_o - p_e) / (1 - p_e); 1 when
/// both put every map in one and the same class).
struct PatternAgreement {
  std::size_t maps = 0;                             ///< maps compared
  double share = 0;                                 ///< share with the same class
  double kappa = 0;                                 ///< Cohen's kappa
  std::vector<std::vector<std::size_t>> confusion;  ///< [first classifier][second classifier]

  /// As JSON.
  nlohmann::json to_json() const {
    return {{"maps", maps}, {"share", share}, {"kappa", kappa}, {"confusion", confusion}};
  }
  /// Reads to_json's output; `where` names the file.
  static PatternAgreement from_json(const nlohmann::json& j, const std::string& where) {
    try {
      PatternAgreement a;
      a.maps = j.at("maps").get<std::size_t>();
      a.share = j.at("share").get<double>();
      a.kappa = j.at("kappa").get<double>();
      a.confusion = j.at("confusion").get<std::vector<std::vector<std::size_t>>>();
      return a;
    } catch (const nlohmann::json::exception& e) {
      fail(where, ": agreement: ", e.what());
    }
  }
};

/// Agreement from a [first][second] table of counts.
inline PatternAgreement agreement_from_counts(std::vector<std::vector<std::size_t>> counts) {
  PatternAgreement a;
  const std::size_t k = counts.size();
  std::vector<double> rows(k, 0), cols(k, 0);
  double same = 0, total = 0;
  for (std::size_t r = 0; r < k; ++r) {
    require(counts[r].size() == k, "agreement: the table of counts is not square");
    for (std::size_t c = 0; c < k; ++c) {
      const auto v = static_cast<double>(counts[r][c]);
      rows[r] += v, cols[c] += v, total += v;
      if (r == c) same += v;
    }
  }
  a.maps = static_cast<std::size_t>(total);
  a.confusion = std::move(counts);
  if (total == 0) return a;
  a.share = same / total;
  double chance = 0;
  for (std::size_t c = 0; c < k; ++c) chance += (rows[c] / total) * (cols[c] / total);
  a.kappa = chance < 1 ? (a.share - chance) / (1 - chance) : (a.share == 1 ? 1.0 : 0.0);
  return a;
}

/// Agreement of two lists of class indices in [0, classes).
inline PatternAgreement pattern_agreement(int classes, const std::vector<int>& first, const std::vector<int>& second) {
  require(first.size() == second.size(), "pattern_agreement: ", first.size(), " and ", second.size(), " classes");
  std::vector<std::vector<std::size_t>> counts(static_cast<std::size_t>(classes),
                                               std::vector<std::size_t>(static_cast<std::size_t>(classes), 0));
  for (std::size_t k = 0; k < first.size(); ++k) {
    require(first[k] >= 0 && first[k] < classes && second[k] >= 0 && second[k] < classes,
            "pattern_agreement: class index outside [0, ", classes, ") at map ", k);
    ++counts[static_cast<std::size_t>(first[k])][static_cast<std::size_t>(second[k])];
  }
  return agreement_from_counts(std::move(counts));
}

// ------------------------------------------------------------------ the network

/// Which network: the paper's (convolution + ReLU), or the GPT-2 replication's (convolution + batch
/// normalisation + ReLU, every stride 2).
enum class PatternCnnArchitecture { paper, replication };

/// Shape of the network (see the file comment). The defaults are the paper's network; replication() gives
/// the GPT-2 replication's.
struct PatternCnnOptions {
  PatternCnnArchitecture architecture = PatternCnnArchitecture::paper;  ///< batch normalisation or not
  Index input_size = 32;                                   ///< S: maps are resampled to S x S
  std::vector<Index> channels = {4, 4, 8, 8, 8, 8, 8, 8};  ///< output channels of each 3 x 3 convolution
  std::vector<Index> strides = {2, 1, 2, 1, 2, 1, 2, 1};   ///< stride of each convolution (padding 1)

  /// The replication's network: input 256 x 256, eight 3 x 3 convolutions of stride 2 (padding 1), each
  /// followed by batch normalisation and ReLU, with 4, 4, 8, 8, 8, 8, 8, 8 output channels; then the linear
  /// layer. 256 = 2^8, so every one of the eight strides halves the image (256 -> 128 -> ... -> 2 -> 1):
  /// no convolution runs on a map already reduced to one pixel, and the linear layer reads one feature per
  /// channel of a last layer that sees the whole map.
  static PatternCnnOptions replication() {
    return {PatternCnnArchitecture::replication, 256, {4, 4, 8, 8, 8, 8, 8, 8}, {2, 2, 2, 2, 2, 2, 2, 2}};
  }
  /// Whether the convolutions are batch-normalised (the replication's network).
  bool batch_norm() const { return architecture == PatternCnnArchitecture::replication; }
};

/// "paper" or "replication" in files and on command lines.
inline const char* architecture_name(PatternCnnArchitecture a) {
  return a == PatternCnnArchitecture::paper ? "paper" : "replication";
}

/// How the network is trained.
struct PatternCnnTraining {
  std::size_t epochs = 8;       ///< passes over the training images
  std::size_t batch_size = 32;  ///< images per step
  double learning_rate = 1e-2;  ///< peak AdamW rate (after a linear warm-up over 5% of the steps)
  double weight_decay = 1e-4;   ///< decoupled, weights only
  std::uint64_t seed = 1;       ///< order of the images in each epoch
};

/// The pattern classifier: 3 x 3 convolutions with ReLU (and, for the replication's architecture, batch
/// normalisation) and a linear layer (file comment).
/// @code
/// darkbert::study::PatternCnn cnn(darkbert::study::paper_pattern_scheme(), {}, /*seed=*/1);
/// cnn.train(images, {.epochs = 8, .seed = 1});
/// int c = cnn.predict(darkbert::study::pattern_image(map, L, n, 32).data(), /*two_segments=*/true);
/// @endcode
class PatternCnn {
 public:
  /// An untrained network for `scheme`'s classes, He-normal weights drawn from `seed`.
  PatternCnn(PatternScheme scheme, PatternCnnOptions options = {}, std::uint64_t seed = 1)
      : scheme_(std::move(scheme)), options_(std::move(options)) {
    scheme_.check();
    layout();
    std::mt19937_64 rng(seed);
    for (const auto& t : tensors_) {
      const double sd = std::sqrt((t.conv ? 2.0 : 1.0) / static_cast<double>(t.fan_in));
      for (Index k = 0; k < t.size; ++k)
        params_[static_cast<std::size_t>(t.offset + k)] =
            t.gain ? 1.0f : t.bias ? 0.0f : static_cast<float>(sd * detail::standard_normal(rng));
    }
  }

  /// The classes it predicts.
  const PatternScheme& scheme() const { return scheme_; }
  /// Its shape.
  const PatternCnnOptions& options() const { return options_; }
  /// S, the side of the input images.
  Index input_size() const { return options_.input_size; }
  /// All weights and biases, flat (layer by layer: weight [O, C, 3, 3], then bias [O] — or, batch-normalised,
  /// gain [O] and shift [O]; then linear [K, F], [K]).
  const std::vector<float>& parameters() const { return params_; }
  /// The batch normalisations' running statistics, layer by layer: mean [O], then variance [O] (empty
  /// for the paper's network). Inference normalises with these.
  const std::vector<float>& running_statistics() const { return running_; }
  /// Mean training loss of each epoch so far.
  const std::vector<double>& training_loss() const { return loss_; }

  /// Trains on the labelled images of `set` (unlabelled ones are skipped).
  void train(const PatternImages& set, const PatternCnnTraining& t = {}) {
    require(set.size == options_.input_size, "PatternCnn::train: images are ", set.size, " x ", set.size,
            ", the network reads ", options_.input_size, " x ", options_.input_size);
    require(set.scheme.names == scheme_.names, "PatternCnn::train: the images are labelled with the classes of '",
            set.scheme.name, "', the network predicts those of '", scheme_.name, "'");
    require(t.batch_size > 0 && t.epochs > 0, "PatternCnn::train: epochs and batch size must be positive");
    std::vector<std::size_t> labelled;
    for (std::size_t k = 0; k < set.count(); ++k)
      if (set.labels[k] >= 0) labelled.push_back(k);
    require(!labelled.empty(), "PatternCnn::train: no labelled images in ", set.source);
    require(!options_.batch_norm() || (t.batch_size >= 2 && labelled.size() >= 2), "PatternCnn::train: batch "
            "normalisation needs batches of two images or more (batch size ", t.batch_size, ", ", labelled.size(),
            " labelled images)");
    const Index S = options_.input_size, pixels = S * S;
    // Batch statistics of one image are undefined: a last batch of one joins the one before it.
    auto batch_size_at = [&](std::size_t first) {
      const std::size_t left = labelled.size() - first;
      return options_.batch_norm() && left == t.batch_size + 1 ? left : std::min(t.batch_size, left);
    };
    std::size_t steps_per_epoch = 0;
    for (std::size_t first = 0; first < labelled.size(); first += batch_size_at(first)) ++steps_per_epoch;
    const std::size_t total_steps = steps_per_epoch * t.epochs;
    const std::size_t warmup = std::max<std::size_t>(1, total_steps / 20);
    std::vector<float> grads(params_.size()), m(params_.size(), 0.0f), v(params_.size(), 0.0f), batch;
    std::vector<int> batch_labels;
    autodiff::Tape<float> tape;
    const detail::SingleThreadedOpenMp one_thread(runs_on_one_thread());
    std::size_t step = 0;
    for (std::size_t epoch = 0; epoch < t.epochs; ++epoch) {
      const auto order = seeded_permutation(labelled.size(), t.seed * 1000003u + epoch);
      double loss_sum = 0;
      for (std::size_t first = 0; first < labelled.size(); first += batch_size_at(first)) {
        const std::size_t count = batch_size_at(first);
        batch.resize(count * static_cast<std::size_t>(pixels));
        batch_labels.resize(count);
        for (std::size_t b = 0; b < count; ++b) {
          const std::size_t k = labelled[order[first + b]];
          std::copy(set.image(k), set.image(k) + pixels,
                    batch.begin() + static_cast<std::ptrdiff_t>(b * static_cast<std::size_t>(pixels)));
          batch_labels[b] = set.labels[k];
        }
        std::fill(grads.begin(), grads.end(), 0.0f);
        tape.reset();
        const auto logits = forward(tape, batch.data(), static_cast<Index>(count), grads.data(), running_.data());
        const auto loss = autodiff::cross_entropy(tape, logits, batch_labels.data());
        tape.backward(loss);
        loss_sum += static_cast<double>(loss.value()[0]) * static_cast<double>(count);
        const double rate = step < warmup
                                ? t.learning_rate * static_cast<double>(step + 1) / static_cast<double>(warmup)
                                : t.learning_rate * static_cast<double>(total_steps - step) /
                                      static_cast<double>(total_steps - warmup + 1);
        adamw(grads, m, v, ++step, rate, t.weight_decay);
      }
      loss_.push_back(loss_sum / static_cast<double>(labelled.size()));
    }
  }

  /// Logits of `count` images of input_size x input_size: [count, classes].
  std::vector<float> logits(const float* images, Index count) const {
    const Index K = scheme_.size(), pixels = options_.input_size * options_.input_size;
    std::vector<float> out(static_cast<std::size_t>(count * K));
    autodiff::Tape<float> tape;
    tape.set_recording(false);
    const detail::SingleThreadedOpenMp one_thread(runs_on_one_thread());
    constexpr Index chunk = 64;
    for (Index first = 0; first < count; first += chunk) {
      const Index b = std::min(chunk, count - first);
      tape.reset();
      // Inference reads the running statistics, never writes them.
      const auto y = forward(tape, images + first * pixels, b, nullptr, const_cast<float*>(running_.data()));
      std::copy(y.value(), y.value() + b * K, out.begin() + static_cast<std::ptrdiff_t>(first * K));
    }
    return out;
  }

  /// The class of one row of logits: the largest logit among the classes allowed (two-segment classes
  /// such as block only when `two_segments`).
  int choose(const float* logits_row, bool two_segments) const {
    int best = -1;
    for (int c = 0; c < scheme_.size(); ++c) {
      if (scheme_.two_segments[static_cast<std::size_t>(c)] && !two_segments) continue;
      if (best < 0 || logits_row[c] > logits_row[best]) best = c;
    }
    return best;
  }

  /// The class of one image.
  int predict(const float* image, bool two_segments) const { return choose(logits(image, 1).data(), two_segments); }

  /// The class of every image of a set.
  std::vector<int> predict(const PatternImages& set) const {
    require(set.size == options_.input_size, "PatternCnn::predict: images are ", set.size, " x ", set.size,
            ", the network reads ", options_.input_size, " x ", options_.input_size);
    const auto all = logits(set.pixels.data(), static_cast<Index>(set.count()));
    std::vector<int> out(set.count());
    for (std::size_t k = 0; k < set.count(); ++k)
      out[k] = choose(all.data() + k * static_cast<std::size_t>(scheme_.size()), set.two_segments[k] != 0);
    return out;
  }

  /// Writes `dir`/cnn.json (classes, shape, training loss) and `dir`/cnn_weights.npy (flat float32).
  void save(const std::filesystem::path& dir) const {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) fail(dir.string(), ": cannot create folder: ", ec.message());
    const nlohmann::json j = {{"format", "darkbert-pattern-cnn/1"},
                              {"scheme", detail::scheme_to_json(scheme_)},
                              {"architecture", architecture_name(options_.architecture)},
                              {"input_size", options_.input_size},
                              {"channels", options_.channels},
                              {"strides", options_.strides},
                              {"parameters", params_.size()},
                              {"training_loss", loss_}};
    write_file_atomically(dir / "cnn.json", j.dump(1) + "\n");
    xt::xtensor<float, 1> w = xt::xtensor<float, 1>::from_shape({params_.size()});
    std::copy(params_.begin(), params_.end(), w.begin());
    write_npy(dir / "cnn_weights.npy", w);
    if (options_.batch_norm()) {
      xt::xtensor<float, 1> r = xt::xtensor<float, 1>::from_shape({running_.size()});
      std::copy(running_.begin(), running_.end(), r.begin());
      write_npy(dir / "cnn_running_statistics.npy", r);
    }
  }

  /// Reads what save wrote; errors name the file.
  static PatternCnn load(const std::filesystem::path& dir) {
    const auto json_path = dir / "cnn.json", weights_path = dir / "cnn_weights.npy";
    const auto j = read_json_file(json_path);
    const std::string where = json_path.string();
    require(j.is_object() && j.value("format", "") == "darkbert-pattern-cnn/1", where,
            ": not a pattern CNN (format 'darkbert-pattern-cnn/1' expected)");
    PatternCnnOptions o;
    try {
      const std::string architecture = j.value("architecture", "paper");  // files before it was named: paper
      require(architecture == "paper" || architecture == "replication", where, ": architecture '", architecture,
              "' (expected 'paper' or 'replication')");
      o.architecture =
          architecture == "paper" ? PatternCnnArchitecture::paper : PatternCnnArchitecture::replication;
      o.input_size = j.at("input_size").get<Index>();
      o.channels = j.at("channels").get<std::vector<Index>>();
      o.strides = j.at("strides").get<std::vector<Index>>();
    } catch (const nlohmann::json::exception& e) {
      fail(where, ": ", e.what());
    }
    PatternCnn cnn(detail::scheme_from_json(j, where), o, 0);
    const auto w = read_npy<float>(weights_path);
    require(w.dimension() == 1 && w.size() == cnn.params_.size(), weights_path.string(), ": ", w.size(),
            " weights, the network of ", where, " has ", cnn.params_.size());
    std::copy(w.begin(), w.end(), cnn.params_.begin());
    if (o.batch_norm()) {
      const auto running_path = dir / "cnn_running_statistics.npy";
      const auto r = read_npy<float>(running_path);
      require(r.dimension() == 1 && r.size() == cnn.running_.size(), running_path.string(), ": ", r.size(),
              " running statistics, the network of ", where, " has ", cnn.running_.size());
      std::copy(r.begin(), r.end(), cnn.running_.begin());
    }
    if (j.contains("training_loss")) cnn.loss_ = j.at("training_loss").get<std::vector<double>>();
    return cnn;
  }

 private:
  // The paper's 32 x 32 network runs faster on one thread; the replication's 256 x 256 one on all of them.
  bool runs_on_one_thread() const { return options_.input_size < 128; }

  struct Slot {
    Index offset, size, fan_in;
    bool conv, bias, gain = false;  // bias and gain: no weight decay; initialised to 0 and 1
  };
  // A convolution's tensors: indices into tensors_ (-1: absent) and its running statistics' offset.
  struct ConvSlots {
    int weight = -1, bias = -1, gain = -1, shift = -1;
    Index running = 0;
  };

  void layout() {
    const auto& o = options_;
    require(o.input_size >= 4 && !o.channels.empty() && o.channels.size() == o.strides.size(),
            "PatternCnn: input size ", o.input_size, " (>= 4) and one stride per convolution (", o.channels.size(),
            " channels, ", o.strides.size(), " strides)");
    Index in = 1, side = o.input_size, offset = 0, running = 0;
    auto add = [&](Slot t) {
      tensors_.push_back(t);
      offset += t.size;
      return static_cast<int>(tensors_.size() - 1);
    };
    for (std::size_t l = 0; l < o.channels.size(); ++l) {
      const Index out = o.channels[l];
      require(out >= 1 && o.strides[l] >= 1, "PatternCnn: convolution ", l, " has ", out, " channels and stride ",
              o.strides[l]);
      ConvSlots c;
      c.weight = add({offset, out * in * 9, in * 9, true, false});
      if (o.batch_norm()) {  // the shift plays the bias's part
        c.gain = add({offset, out, 1, true, false, true});
        c.shift = add({offset, out, 1, true, true});
        c.running = running;
        running += 2 * out;
      } else {
        c.bias = add({offset, out, 1, true, true});
      }
      convolutions_.push_back(c);
      side = (side - 1) / o.strides[l] + 1;  // (side + 2 * 1 - 3) / stride + 1
      in = out;
    }
    features_ = in * side * side;
    linear_weight_ = add({offset, scheme_.size() * features_, features_, false, false});
    linear_bias_ = add({offset, scheme_.size(), 1, false, true});
    params_.assign(static_cast<std::size_t>(offset), 0.0f);
    running_.assign(static_cast<std::size_t>(running), 0.0f);
    for (const auto& c : convolutions_)  // running variance starts at 1, mean at 0
      if (c.gain >= 0)
        std::fill_n(running_.begin() + c.running + tensors_[static_cast<std::size_t>(c.gain)].size,
                    tensors_[static_cast<std::size_t>(c.gain)].size, 1.0f);
  }

  /// images [B, S, S] -> logits [B, K]; gradients into `grads` (null: inference, batch normalisation with
  /// the running statistics; else with the batch's, updating `running`).
  autodiff::Var<float> forward(autodiff::Tape<float>& tape, const float* images, Index batch, float* grads,
                               float* running) const {
    const Index S = options_.input_size;
    auto* p = const_cast<float*>(params_.data());  // read only: the tape's handles are not const
    auto var = [&](int slot, autodiff::Shape shape) {
      if (slot < 0) return autodiff::Var<float>{};
      const Slot& t = tensors_[static_cast<std::size_t>(slot)];
      return tape.external(p + t.offset, shape, grads ? grads + t.offset : nullptr);
    };
    auto h = tape.constant(images, {batch, 1, S, S});
    Index in = 1;
    for (std::size_t l = 0; l < options_.channels.size(); ++l) {
      const Index out = options_.channels[l];
      const ConvSlots& c = convolutions_[l];
      h = autodiff::conv2d(tape, h, var(c.weight, {out, in, 3, 3}), var(c.bias, {out}), {options_.strides[l], 1});
      if (c.gain >= 0) {
        const autodiff::BatchNormOptions<float> bn{.training = grads != nullptr,
                                                   .running_mean = running + c.running,
                                                   .running_variance = running + c.running + out};
        h = autodiff::batch_norm(tape, h, var(c.gain, {out}), var(c.shift, {out}), bn);
      }
      h = autodiff::activation(tape, h, Activation::relu);
      in = out;
    }
    return autodiff::linear(tape, autodiff::flatten(tape, h), var(linear_weight_, {scheme_.size(), features_}),
                            var(linear_bias_, {scheme_.size()}));
  }

  /// One AdamW step (train/optimizer.hpp's update: bias-corrected moments, decoupled decay on weights).
  void adamw(const std::vector<float>& grads, std::vector<float>& m, std::vector<float>& v, std::size_t step,
             double rate, double weight_decay) {
    constexpr double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
    const float c1 = static_cast<float>(1 - std::pow(beta1, static_cast<double>(step)));
    const float c2 = static_cast<float>(1 - std::pow(beta2, static_cast<double>(step)));
    const float lr = static_cast<float>(rate), b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2);
    for (const auto& t : tensors_) {
      const float decay = t.bias || t.gain ? 1.0f : static_cast<float>(1 - rate * weight_decay);
      for (Index k = t.offset; k < t.offset + t.size; ++k) {
        const auto i = static_cast<std::size_t>(k);
        m[i] = b1 * m[i] + (1 - b1) * grads[i];
        v[i] = b2 * v[i] + (1 - b2) * grads[i] * grads[i];
        params_[i] = params_[i] * decay - lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + static_cast<float>(epsilon));
      }
    }
  }

  PatternScheme scheme_;
  PatternCnnOptions options_;
  std::vector<Slot> tensors_;
  std::vector<ConvSlots> convolutions_;
  int linear_weight_ = -1, linear_bias_ = -1;
  Index features_ = 0;
  std::vector<float> params_;
  std::vector<float> running_;  // batch normalisation: per convolution mean [O], variance [O]
  std::vector<double> loss_;
};

// ------------------------------------------------------------------ training sets and evaluation

/// A training set and a held-out set of labelled images; for prototypes also the held-out maps themselves,
/// so the rule classifier can be scored and compared on the same maps.
struct PatternTrainingSet {
  PatternImages train;                            ///< what the CNN learns from
  PatternImages held_out;                         ///< what it is scored on
  std::vector<LabelledPatternMap> held_out_maps;  ///< the held-out maps with tokens (prototypes only; else empty)
};

/// Sizes, classes and seed of the default (synthetic) training set.
struct PrototypeSetOptions {
  PatternClasses classes = PatternClasses::paper;  ///< the paper's five or the GPT-2 replication's four
  std::size_t train_per_class = 300;    ///< training prototypes per class
  std::size_t held_out_per_class = 60;  ///< held-out prototypes per class (a separate seed stream)
  std::uint64_t seed = 1;               ///< the prototypes' seed (held-out: seed + 1)
  PrototypeOptions maps;                ///< lengths, causal or not
  Index input_size = 32;                ///< S
};

/// Seeded prototypes: a training set and an independent held-out set (another seed).
inline PatternTrainingSet prototype_training_set(const PrototypeSetOptions& o = {}) {
  PatternTrainingSet set;
  const PatternScheme scheme = pattern_scheme(o.classes);
  const auto K = static_cast<std::size_t>(scheme.size());
  const std::string kind = std::string(o.maps.causal ? "causal" : "bidirectional") +
                           (o.classes == PatternClasses::paper ? "" : " GPT-2 replication");
  set.train = images_of(pattern_prototypes(o.train_per_class, o.seed, o.maps, o.classes), o.input_size,
                        std::to_string(o.train_per_class * K) + " synthetic " + kind + " prototypes (seed " +
                            std::to_string(o.seed) + ")",
                        scheme);
  set.held_out_maps = pattern_prototypes(o.held_out_per_class, o.seed + 1, o.maps, o.classes);
  set.held_out = images_of(set.held_out_maps, o.input_size,
                           std::to_string(o.held_out_per_class * K) + " held-out synthetic " + kind +
                               " prototypes (seed " + std::to_string(o.seed + 1) + ")",
                           scheme);
  return set;
}

/// A user's labelled-map folder split into training and held-out images: a seeded `held_out_share` of
/// each class's maps (at least one when the class has two or more) is held out.
inline PatternTrainingSet labelled_training_set(const std::filesystem::path& dir, const PatternScheme& scheme,
                                                Index input_size, double held_out_share, std::uint64_t seed) {
  require(held_out_share > 0 && held_out_share < 1, "labelled_training_set: held-out share ", held_out_share,
          " is not in (0, 1)");
  const PatternImages all = read_labelled_maps(dir, scheme, input_size);
  PatternTrainingSet set;
  for (PatternImages* part : {&set.train, &set.held_out}) {
    part->scheme = scheme;
    part->size = input_size;
  }
  std::vector<char> held(all.count(), 0);
  for (int c = 0; c < scheme.size(); ++c) {
    std::vector<std::size_t> members;
    for (std::size_t k = 0; k < all.count(); ++k)
      if (all.labels[k] == c) members.push_back(k);
    if (members.size() < 2) continue;
    const auto order = seeded_permutation(members.size(), seed + static_cast<std::uint64_t>(c));
    const auto take =
        std::max<std::size_t>(1, static_cast<std::size_t>(held_out_share * static_cast<double>(members.size())));
    for (std::size_t r = 0; r < take; ++r) held[members[order[r]]] = 1;
  }
  const Index pixels = input_size * input_size;
  for (std::size_t k = 0; k < all.count(); ++k) {
    const std::vector<float> image(all.image(k), all.image(k) + pixels);
    (held[k] ? set.held_out : set.train).add(image, all.labels[k], all.two_segments[k] != 0);
  }
  require(set.held_out.count() > 0, dir.string(), ": too few labelled maps to hold any out (a class needs two)");
  set.train.source = std::to_string(set.train.count()) + " of " + all.source;
  set.held_out.source =
      std::to_string(set.held_out.count()) + " held out (seed " + std::to_string(seed) + ") of " + all.source;
  return set;
}

/// What a trained CNN is worth: its scores on the held-out images, and — when the held-out maps carry
/// tokens (prototypes) — the rule classifier's scores on the same maps and the two classifiers' agreement.
struct PatternCnnEvaluation {
  std::string training_set;                   ///< the training images' source
  std::string held_out_set;                   ///< the held-out images' source
  std::size_t training_maps = 0;              ///< labelled training images
  PatternScores cnn;                          ///< CNN against the held-out labels
  std::optional<PatternScores> rules;         ///< rules against the held-out labels
  std::optional<PatternAgreement> agreement;  ///< rules (first) against the CNN (second)

  /// As JSON (rules and agreement null when not measured).
  nlohmann::json to_json() const {
    return {{"training_set", training_set},
            {"held_out_set", held_out_set},
            {"training_maps", training_maps},
            {"cnn", cnn.to_json()},
            {"rules", rules ? rules->to_json() : nlohmann::json()},
            {"agreement", agreement ? agreement->to_json() : nlohmann::json()}};
  }
  /// Reads to_json's output; `where` names the file.
  static PatternCnnEvaluation from_json(const nlohmann::json& j, const std::string& where) {
    PatternCnnEvaluation e;
    try {
      e.training_set = j.at("training_set").get<std::string>();
      e.held_out_set = j.at("held_out_set").get<std::string>();
      e.training_maps = j.at("training_maps").get<std::size_t>();
    } catch (const nlohmann::json::exception& x) {
      fail(where, ": CNN evaluation: ", x.what());
    }
    e.cnn = PatternScores::from_json(j.at("cnn"), where);
    if (!j.at("rules").is_null()) e.rules = PatternScores::from_json(j.at("rules"), where);
    if (!j.at("agreement").is_null()) e.agreement = PatternAgreement::from_json(j.at("agreement"), where);
    return e;
  }
};

/// The rule classifier of a scheme with its default thresholds: PatternRules for the paper's classes,
/// ReplicationPatternRules for the replication's.
inline PatternRule default_pattern_rule(const PatternScheme& scheme) {
  if (scheme == replication_pattern_scheme()) return ReplicationPatternRules{}.rule();
  require(scheme == paper_pattern_scheme(), "pattern scheme '", scheme.name,
          "' has no built-in rules (give a PatternRule)");
  return PatternRules{}.rule();
}

/// Scores `cnn` on the held-out images of `set`; with held-out maps, also the rules (`rule`, or by default
/// the rules of the CNN's scheme) and the agreement.
inline PatternCnnEvaluation evaluate_pattern_cnn(const PatternCnn& cnn, const PatternTrainingSet& set,
                                                 PatternRule rule = {}) {
  if (!rule && !set.held_out_maps.empty()) rule = default_pattern_rule(cnn.scheme());
  PatternCnnEvaluation e;
  e.training_set = set.train.source;
  e.held_out_set = set.held_out.source;
  for (int label : set.train.labels) e.training_maps += label >= 0;
  std::vector<int> truth, predicted;
  const auto all = cnn.predict(set.held_out);
  for (std::size_t k = 0; k < set.held_out.count(); ++k)
    if (set.held_out.labels[k] >= 0) truth.push_back(set.held_out.labels[k]), predicted.push_back(all[k]);
  const int K = cnn.scheme().size();
  e.cnn = score_patterns(K, truth, predicted);
  if (rule && !set.held_out_maps.empty()) {
    require(set.held_out_maps.size() == set.held_out.count(), "evaluate_pattern_cnn: ", set.held_out_maps.size(),
            " held-out maps for ", set.held_out.count(), " images");
    std::vector<int> by_rules;
    for (std::size_t k = 0; k < set.held_out_maps.size(); ++k) {
      if (set.held_out.labels[k] < 0) continue;
      const auto& m = set.held_out_maps[k];
      const PatternBaseline base(m.length, m.causal, m.tokens);
      by_rules.push_back(rule(base.summarize(m.weights.data(), m.length)));
    }
    e.rules = score_patterns(K, truth, by_rules);
    e.agreement = pattern_agreement(K, by_rules, predicted);
  }
  return e;
}

}  // namespace darkbert::study
