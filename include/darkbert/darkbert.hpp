#pragma once
/// @file
/// darkbert — everything except the figures in one include (figures: <darkbert/viz/heatmap.hpp> and
/// <darkbert/viz/attention_grid.hpp>, target darkbert::viz). Larger projects may prefer single headers.

#include "version.hpp"

#include "core/allocator_policy.hpp"
#include "core/blas_kernel.hpp"
#include "core/kernel_dispatch.hpp"
#include "core/error.hpp"
#include "core/matrix.hpp"
#include "core/progress.hpp"
#include "core/tensor.hpp"
#include "core/threads.hpp"

#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"

#include "tokenizer/tokenizer.hpp"

#include "model/batch.hpp"
#include "model/case_file.hpp"
#include "model/config.hpp"
#include "model/transformer.hpp"

#include "hooks/hook_point.hpp"
#include "hooks/hooks.hpp"
#include "hooks/masking_policy.hpp"

#include "analysis/ablation_sweep.hpp"
#include "analysis/all.hpp"

#include "data/annotator.hpp"
#include "data/conllu.hpp"
#include "data/framenet.hpp"
#include "data/glue.hpp"
#include "analysis/linguistic_tokens.hpp"
#include "data/negation.hpp"
#include "data/projection.hpp"
#include "data/root.hpp"
#include "data/word_tokenizer.hpp"
