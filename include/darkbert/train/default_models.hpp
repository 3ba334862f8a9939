#pragma once
/// @file
/// The embedded default models: a BERT and a GPT-2 pretrained from scratch with the `study` recipe
/// (train/pretraining_recipe.hpp) on the data root's corpus; `cached_model` gives the others (`mini` BERT
/// and GPT-2), `models_in_cache` several at once. No pretrained weights can be downloaded, so
/// these are what the reproduction examples analyse when no checkpoint is given. They are trained on first
/// use (within 45 minutes each on two cores) and cached in `<cache>/models/` (data/root.hpp), never shipped.
///
/// @code
/// auto root = darkbert::DataRoot::from_environment();
/// auto dir = darkbert::default_model(root, "bert");  // trained once, then read from the cache
/// auto model = darkbert::Transformer<float>::load(dir);
/// @endcode
///
/// A first use that is killed keeps its checkpoint: the next one resumes it (and ends bit-identical to an
/// uninterrupted training). Two processes asking at once take turns on a lock file; the second finds the
/// model the first trained.


#include <exception>   // std::exception_ptr, std::current_exception, std::rethrow_exception
#include <filesystem>  // std::filesystem
#include <mutex>       // std::mutex, std::lock_guard
#include <optional>    // std::optional
#include <ostream>     // std::ostream
#include <string>      // std::string
#include <thread>      // std::thread
#include <vector>      // std::vector

#include "../core/error.hpp"
#include "../core/file_lock.hpp"
#include "../core/line_log.hpp"
#include "../core/threads.hpp"
#include "../data/root.hpp"
#include "pretraining_recipe.hpp"
#include "pretraining_run.hpp"

namespace darkbert {

/// The recipe of each architecture's default model: `study` (BERT 6 x 8 heads, GPT-2 12 x 4: the paper's
/// per-head questions need more heads than `mini`'s 8 and 16).
inline std::string default_recipe_name(const std::string& arch) {
  require(arch == "bert" || arch == "gpt2", "default model: arch is '", arch, "' (bert or gpt2)");
  return "study";
}

/// The version of the cached model `recipe` trains for `arch`, bumped when that recipe changes, so that a
/// cache never serves a model trained by an older one (and a change to one recipe keeps the others' caches).
/// mini-bert 2: the two-length recipe at lr 1e-3. mini-gpt2 2: the sampled softmax; 3: four blocks
/// (docs/default-models.md). study-bert 3: the first default BERT with 48 heads (numbered on from
/// mini-bert's 2, which it replaces as the default); 4: pretrained without dropout; 5: dropout 0.05 and
/// 20% of the steps at 128 tokens. study-gpt2 1: 12 x 4; 2: positions at rms 0.2, attention dropout 0.2,
/// 5,500 steps (the first default GPT-2 with 48 heads).
inline int model_version(const std::string& recipe, const std::string& arch) {
  require(arch == "bert" || arch == "gpt2", "default model: arch is '", arch, "' (bert or gpt2)");
  if (recipe == "mini") return arch == "gpt2" ? 3 : 2;
  if (recipe == "study") return arch == "gpt2" ? 2 : 5;
  fail("default model: no cached model for the recipe '", recipe, "' of ", arch,
       " (study-bert, study-gpt2, mini-bert or mini-gpt2)");
}

/// The version of `arch`'s default model (model_version of its default recipe).
inline int default_model_version(const std::string& arch) { return model_version(default_recipe_name(arch), arch); }

/// Where the model `recipe` trains for `arch` is cached: `<cache>/models/<recipe>-<arch>-v<version>`.
inline std::filesystem::path cached_model_dir(const DataRoot& root, const std::string& recipe, const std::string& arch) {
  return root.cache_dir() / "models" / (recipe + "-" + arch + "-v" + std::to_string(model_version(recipe, arch)));
}

/// Where the default model of `arch` (bert or gpt2) is cached.
inline std::filesystem::path default_model_dir(const DataRoot& root, const std::string& arch) {
  return cached_model_dir(root, default_recipe_name(arch), arch);
}

/// How default_model trains on first use.
struct DefaultModelOptions {
  std::optional<PretrainRecipe> recipe;  ///< instead of `mini` (tests: a seconds-long recipe)
  bool show_progress = true;             ///< progress bars on stderr while training
  std::ostream* log = nullptr;           ///< what happens (may be null)
};

/// A folder of the model cache and the recipe that trains it (model_in_cache).
struct CacheEntry {
  std::filesystem::path dir;  ///< e.g. cached_model_dir(root, "study", "gpt2")
  PretrainRecipe recipe;      ///< what trains it when it is absent
};

namespace detail {

inline bool is_model_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(dir / "config.json", ec) && std::filesystem::is_regular_file(dir / "model.safetensors", ec);
}

}  // namespace detail

/// `entry.dir` if it holds a model, else `entry.recipe` pretrained into it first: in `<dir>.partial`
/// (resumed if a first use was killed), then renamed into place, so `<dir>` is either absent or whole. Two
/// processes or threads asking at once take turns on a lock file; the second finds what the first trained.
inline std::filesystem::path model_in_cache(const DataRoot& root, const CacheEntry& entry, bool show_progress = true,
                                            std::ostream* log = nullptr) {
  namespace fs = std::filesystem;
  const fs::path& dir = entry.dir;
  if (detail::is_model_folder(dir)) return dir;
  fs::create_directories(dir.parent_path());
  const FileLock lock(fs::path(dir.string() + ".lock"));
  if (detail::is_model_folder(dir)) return dir;  // trained by another process while this one waited

  const fs::path partial = dir.string() + ".partial";
  if (log) {
    *log << "model cache: no " << dir.filename().string() << " in " << dir.parent_path().string() << "; pretraining it ("
         << entry.recipe.arch << ", ";
    if (entry.recipe.steps > 0)
      *log << entry.recipe.steps << " steps";
    else
      *log << entry.recipe.minutes << " minutes";
    *log << ") into " << partial.string() << " (first use only; a killed run resumes)" << std::endl;
  }
  const auto result = run_pretraining(root, {.out = partial, .recipe = entry.recipe, .resume = true,
                                             .show_progress = show_progress, .log = log,
                                             .progress_label = "pretrain " + dir.filename().string()});
  fs::remove_all(partial / "checkpoint");  // only needed to resume; the model is the folder itself
  std::error_code ec;
  fs::remove_all(dir, ec);  // a folder without a model (e.g. emptied by hand)
  fs::rename(partial, dir);
  if (log)
    *log << "model cache: saved " << dir.string() << " (held-out accuracy " << result.heldout.accuracy << " after "
         << result.state.step << " steps)" << std::endl;
  return dir;
}

/// model_in_cache for every entry, the absent ones pretrained at once: each on an equal share of this
/// thread's OpenMP threads, and the share of one that is done goes to those still training
/// (core/threads.hpp). Pretraining gives the same bits on any thread count, so every model is the one
/// model_in_cache alone would train (tests/test_train_default_models.cpp). Log lines stay whole
/// (core/line_log.hpp). An error in one training is rethrown once the others have finished. Returns the
/// folders in the order of `entries`.
inline std::vector<std::filesystem::path> models_in_cache(const DataRoot& root, const std::vector<CacheEntry>& entries,
                                                          bool show_progress = true, std::ostream* log = nullptr) {
  std::vector<std::size_t> absent;
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (!detail::is_model_folder(entries[i].dir)) absent.push_back(i);
  std::vector<std::filesystem::path> dirs(entries.size());
  if (absent.size() > 1) {
    std::mutex lines;  // the log's, and the error's
    std::exception_ptr error;
    ThreadShares shares(num_threads(), static_cast<int>(absent.size()));
    auto train = [&](std::size_t i) {
      const ThreadShareScope share(shares);
      LineLog own_log(log, lines);
      try {
        dirs[i] = model_in_cache(root, entries[i], show_progress, log ? &own_log : nullptr);
      } catch (...) {
        const std::lock_guard<std::mutex> guard(lines);
        if (!error) error = std::current_exception();
      }
    };
    if (log)
      *log << "model cache: pretraining " << absent.size() << " models at once, each on its share of " << num_threads()
           << (num_threads() == 1 ? " thread" : " threads") << std::endl;
    std::vector<std::thread> others;
    for (std::size_t k = 1; k < absent.size(); ++k) others.emplace_back(train, absent[k]);
    train(absent.front());  // the calling thread trains one too
    for (auto& t : others) t.join();
    if (error) std::rethrow_exception(error);
  }
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (dirs[i].empty()) dirs[i] = model_in_cache(root, entries[i], show_progress, log);
  return dirs;
}

/// The folder of the model `recipe` (study or mini) trains for `arch`: from the cache, or pretrained into
/// it first (model_in_cache; `o.recipe` instead of the named one).
inline std::filesystem::path cached_model(const DataRoot& root, const std::string& recipe, const std::string& arch,
                                          const DefaultModelOptions& o = {}) {
  return model_in_cache(root, {cached_model_dir(root, recipe, arch), o.recipe.value_or(named_recipe(recipe, arch))},
                        o.show_progress, o.log);
}

/// The folder of the default model of `arch` (bert or gpt2: the `study` recipe), pretrained into the
/// cache on first use (see cached_model).
inline std::filesystem::path default_model(const DataRoot& root, const std::string& arch, const DefaultModelOptions& o = {}) {
  return cached_model(root, default_recipe_name(arch), arch, o);
}

}  // namespace darkbert
