// RUN: memopt-opt %s -split-input-file -verify-diagnostics
// The dialect verifies every memopt.* attribute: its name is one the
// dialect declares, its value has the declared type, and the typed
// summaries hold sensible numbers.

// expected-error @+1 {{unknown memopt attribute 'memopt.budget_byte'}}
func.func @misspelled() attributes {memopt.budget_byte = 10 : i64} {
  return
}

// -----

// expected-error @+1 {{attribute 'memopt.plan' must be of type PlanSummaryAttr, got {baseline_peak_bytes = 10 : i64}}}
func.func @untyped_plan() attributes {memopt.plan = {baseline_peak_bytes = 10 : i64}} {
  return
}

// -----

// expected-error @+1 {{attribute 'memopt.budget_bytes' must be of type IntegerAttr, got "1GiB"}}
func.func @budget_as_text() attributes {memopt.budget_bytes = "1GiB"} {
  return
}

// -----

// expected-error @+1 {{memopt.cost_model: unknown cost class 'Convolution' (expected one of Conv, Matmul, Elementwise, Reduction, Normalization, Pooling, Copy, View, Unknown, MaxPooling, Softmax, BatchNorm, BatchedMatmul, Gemm)}}
func.func @unknown_cost_class() attributes {memopt.cost_model = {Convolution = array<f64: 1.0, 0.0, 0.0>}} {
  return
}

// -----

// expected-error @+1 {{memopt.cost_model: class 'Conv' must be array<f64: secondsPerFlop, secondsPerByte, overheadSeconds>, got array<f64: 1.000000e+00, 0.000000e+00>}}
func.func @two_coefficients() attributes {memopt.cost_model = {Conv = array<f64: 1.0, 0.0>}} {
  return
}

// -----

// expected-error @+1 {{memopt.cost_model: class 'Gemm' has a coefficient that is not a finite non-negative number}}
func.func @negative_price() attributes {memopt.cost_model = {Gemm = array<f64: -1.0e-12, 0.0, 0.0>}} {
  return
}

// -----

// expected-error @+1 {{attribute 'memopt.cost_model' must be of type DictionaryAttr}}
func.func @not_a_dictionary() attributes {memopt.cost_model = [1.0, 0.0, 0.0]} {
  return
}

// -----

// expected-error @+1 {{attribute 'memopt.intra_op_threads' must be at least 1, got 0 : i64}}
func.func @no_threads() attributes {memopt.intra_op_threads = 0 : i64} {
  return
}

// -----

// expected-error @+1 {{plan byte counts and segments must not be negative}}
func.func @negative_peak() attributes {memopt.plan = #memopt.plan<baseline_peak_bytes = -5, planned_peak_bytes = 1, budget_bytes = -1, feasible = true, min_reachable_peak_bytes = 1, recompute_seconds = 0.0, step_seconds = 0.0, preference = speed, segments = 1>} {
  return
}

// -----

// expected-error @+1 {{plan budget_bytes -2 is below -1 (no budget)}}
func.func @budget_below_none() attributes {memopt.plan = #memopt.plan<baseline_peak_bytes = 5, planned_peak_bytes = 1, budget_bytes = -2, feasible = true, min_reachable_peak_bytes = 1, recompute_seconds = 0.0, step_seconds = 0.0, preference = speed, segments = 1>} {
  return
}

// -----

// expected-error @+1 {{plan seconds must be finite and not negative}}
func.func @negative_seconds() attributes {memopt.plan = #memopt.plan<baseline_peak_bytes = 5, planned_peak_bytes = 1, budget_bytes = -1, feasible = true, min_reachable_peak_bytes = 1, recompute_seconds = -1.0, step_seconds = 0.0, preference = balanced, segments = 1>} {
  return
}

// -----

// expected-error @+2 {{expected true or false}}
// expected-error @+1 {{failed to parse Memopt_PlanSummaryAttr parameter 'feasible'}}
func.func @feasible_as_number() attributes {memopt.plan = #memopt.plan<baseline_peak_bytes = 5, planned_peak_bytes = 1, budget_bytes = -1, feasible = 1, min_reachable_peak_bytes = 1, recompute_seconds = 0.0, step_seconds = 0.0, preference = balanced, segments = 1>} {
  return
}

// -----

// expected-error @+2 {{expected ::mlir::memopt::PlanGoal to be one of: budget, speed, balanced, memory}}
// expected-error @+1 {{failed to parse Memopt_PlanSummaryAttr parameter 'preference'}}
func.func @unknown_preference() attributes {memopt.plan = #memopt.plan<baseline_peak_bytes = 5, planned_peak_bytes = 1, budget_bytes = -1, feasible = true, min_reachable_peak_bytes = 1, recompute_seconds = 0.0, step_seconds = 0.0, preference = fastest, segments = 1>} {
  return
}

// -----

// expected-error @+1 {{prefetch counts must satisfy 0 <= prefetched_early <= offloaded_regions, 0 <= held_regions <= offloaded_regions and the peak be >= 0}}
func.func @more_early_than_offloaded() attributes {memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 55.0, offloaded_regions = 1, predicted_peak_bytes = 10, prefetched_early = 2, stall_seconds = 0.0, transfer_seconds = 0.0, d2h_bandwidth_gbps = 55.0, offload_seconds = 0.0, held_regions = 0>} {
  return
}

// -----

// expected-error @+1 {{prefetch bandwidths must be positive GB/s}}
func.func @no_bandwidth() attributes {memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 0.0, offloaded_regions = 1, predicted_peak_bytes = 10, prefetched_early = 0, stall_seconds = 0.0, transfer_seconds = 0.0, d2h_bandwidth_gbps = 55.0, offload_seconds = 0.0, held_regions = 0>} {
  return
}

// -----

// expected-error @+1 {{prefetch bandwidths must be positive GB/s}}
func.func @no_d2h_bandwidth() attributes {memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 55.0, offloaded_regions = 1, predicted_peak_bytes = 10, prefetched_early = 0, stall_seconds = 0.0, transfer_seconds = 0.0, d2h_bandwidth_gbps = -1.0, offload_seconds = 0.0, held_regions = 0>} {
  return
}

// -----

// expected-error @+1 {{0 <= held_regions <= offloaded_regions}}
func.func @more_held_than_offloaded() attributes {memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 55.0, offloaded_regions = 1, predicted_peak_bytes = 10, prefetched_early = 0, stall_seconds = 0.0, transfer_seconds = 0.0, d2h_bandwidth_gbps = 55.0, offload_seconds = 0.0, held_regions = 2>} {
  return
}

// -----

// expected-error @+1 {{prefetch seconds must be finite and not negative}}
func.func @negative_offload_seconds() attributes {memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 55.0, offloaded_regions = 1, predicted_peak_bytes = 10, prefetched_early = 0, stall_seconds = 0.0, transfer_seconds = 0.0, d2h_bandwidth_gbps = 55.0, offload_seconds = -1.0, held_regions = 0>} {
  return
}
