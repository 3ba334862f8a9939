// The FrameNet sentence selection of "Revealing the Dark Secrets of BERT" (sec. 4.2) over a full release:
// exemplar sentences of at most 12 tokens with at most 3 core frame elements, each at least 2 tokens away
// from the frame-evoking target. Unpacks framenet/fndata-1.5-lu-frame.tar.xz into the per-user cache on
// first use (see include/darkbert/data/root.hpp for where data and cache live).
//
//   darkbert_framenet_selection                          # full release, the paper's parameters
//   darkbert_framenet_selection --sample                 # the 200-LU sample in ../shared/data
//   darkbert_framenet_selection --max-element-tokens 3 --output selected.jsonl
//
// Prints the counts and the wall time; --output writes one JSON object per selected sentence.

#include <CLI/CLI.hpp>             // CLI::App

#include <chrono>      // std::chrono::steady_clock
#include <exception>   // std::exception
#include <iostream>    // std::cout, std::cerr
#include <set>         // std::set
#include <string>      // std::string

#include "darkbert/data/framenet.hpp"
#include "darkbert/study/framenet_heads.hpp"  // darkbert::study::write_framenet_selection

int main(int argc, char** argv) {
  CLI::App app{"FrameNet sentence selection (Kovaleva et al. 2019, sec. 4.2): the sentences and frame-element links "
               "the paper's relation-specific heads (section 3.2) are measured on"};
  app.footer("Example: darkbert_framenet_selection --sample --output selection.jsonl");
  bool sample = false;
  std::string dir, output;
  darkbert::FrameNetSelectionOptions options;
  app.add_flag("--sample", sample, "use the sample in the data root instead of the full release");
  app.add_option("--dir", dir, "a FrameNet release folder (with frame/ and lu/); overrides the data root");
  app.add_option("--max-tokens", options.max_tokens, "longest sentence, in whitespace tokens")->capture_default_str();
  app.add_option("--max-core-elements", options.max_core_elements, "most overt core elements (0 = no limit)")
      ->capture_default_str();
  app.add_option("--max-element-tokens", options.max_element_tokens, "longest core element in tokens (0 = no limit)")
      ->capture_default_str();
  app.add_option("--min-distance", options.min_distance, "least target-element distance in tokens")
      ->capture_default_str();
  app.add_option("--output", output, "write the selected sentences here (JSON lines)");
  CLI11_PARSE(app, argc, argv);

  try {
    const auto start = std::chrono::steady_clock::now();
    const auto root = darkbert::DataRoot::from_environment();
    const std::filesystem::path release =
        !dir.empty() ? std::filesystem::path(dir)
                     : (sample ? darkbert::framenet_sample_dir(root) : darkbert::framenet_release_dir(root));
    const auto ready = std::chrono::steady_clock::now();
    darkbert::FrameNet fn(release);
    const auto selected = darkbert::select_framenet_examples(fn, options, &std::cerr);
    const auto done = std::chrono::steady_clock::now();

    std::set<int> sentences, lexical_units;
    for (const auto& ex : selected) {
      sentences.insert(ex.sentence_id);
      lexical_units.insert(ex.lu_id);
    }
    auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
    std::cout << "release: " << release.string() << "\n"
              << "frames: " << fn.frame_count() << ", lexical units: " << fn.lexical_unit_files().size() << "\n"
              << "options: max_tokens " << options.max_tokens << ", max_core_elements " << options.max_core_elements
              << ", max_element_tokens " << options.max_element_tokens << ", min_distance " << options.min_distance
              << "\n"
              << "selected annotation sets: " << selected.size() << " (" << sentences.size() << " distinct sentences, "
              << lexical_units.size() << " lexical units)\n"
              << "time: " << seconds(start, ready) << " s to locate/unpack, " << seconds(ready, done) << " s to read and select\n";

    if (!output.empty()) {
      darkbert::study::write_framenet_selection(selected, output);  // replaced only when complete
      std::cout << "wrote " << output << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "darkbert_framenet_selection: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
