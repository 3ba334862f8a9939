#pragma once
/// @file
/// Everything in darkbert/analysis: attention views, token annotations, attention metrics with their streaming
/// accumulators, task metrics, and plain-data result tables.
///
/// @code
/// #include "darkbert/analysis/all.hpp"
/// @endcode

#include "darkbert/analysis/accumulate_type.hpp"         // detail::accumulate_t
#include "darkbert/analysis/attention_view.hpp"          // AttentionView
#include "darkbert/analysis/classification_metrics.hpp"  // accuracy, f1_*, matthews_corrcoef, ConfusionMatrix
#include "darkbert/analysis/correlation.hpp"             // pearson, spearman, PearsonAccumulator
#include "darkbert/analysis/cosine_similarity.hpp"       // head_cosine_similarity, CosineSimilarityAccumulator
#include "darkbert/analysis/head_summary.hpp"            // head_summary, HeadSummaryAccumulator
#include "darkbert/analysis/js_distance.hpp"             // head_js_distance, HeadDistanceAccumulator
#include "darkbert/analysis/link_attention.hpp"          // max_link_attention, LinkAttentionAccumulator
#include "darkbert/analysis/percentile.hpp"              // percentile, heads_above_percentile
#include "darkbert/analysis/results.hpp"                 // Table, HeadMatrix, write_table
#include "darkbert/analysis/running_mean.hpp"            // RunningMean
#include "darkbert/analysis/synthetic_attention.hpp"     // fill_random_attention
#include "darkbert/analysis/task_metrics.hpp"            // accuracy_metric, f1_metric, pearson_metric, ...
#include "darkbert/analysis/token_annotation.hpp"        // TokenAnnotation, TokenClass, token_class::*
#include "darkbert/analysis/token_class_attention.hpp"   // attention_to_class, TokenClassAttention
#include "darkbert/analysis/token_to_token.hpp"          // ClassToClassAttention, QueryCategoryAttention
#include "darkbert/analysis/xlogx.hpp"                   // detail::xlogx_sum (vectorised x ln x)
