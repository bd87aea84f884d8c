// RUN: memopt-opt %s | FileCheck %s
// RUN: memopt-opt %s | memopt-opt | FileCheck %s
// The dialect's discardable attributes round-trip with their types: the
// planner's summary (#memopt.plan) and the prefetch schedule
// (#memopt.prefetch) as typed attributes, the rest as builtin ones.

// CHECK-LABEL: func.func @planned
// CHECK-SAME: memopt.budget_bytes = 4096 : i64
// CHECK-SAME: memopt.plan = #memopt.plan<baseline_peak_bytes = 8192, planned_peak_bytes = 4000, budget_bytes = 4096, feasible = true, min_reachable_peak_bytes = 3000, recompute_seconds = 1.250000e-03, step_seconds = 2.000000e-02, preference = budget, segments = 7>
// CHECK-SAME: memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 5.500000e+01, offloaded_regions = 2, predicted_peak_bytes = 4000, prefetched_early = 1, stall_seconds = 0.000000e+00, transfer_seconds = 3.000000e-04, d2h_bandwidth_gbps = 5.000000e+01, offload_seconds = 3.200000e-04, held_regions = 1>
// CHECK-SAME: memopt.unplanned_peak_bytes = 8192 : i64
func.func @planned(%x: tensor<4xf32>) -> tensor<4xf32> attributes {
    memopt.unplanned_peak_bytes = 8192 : i64,
    memopt.budget_bytes = 4096 : i64,
    memopt.plan = #memopt.plan<baseline_peak_bytes = 8192,
      planned_peak_bytes = 4000, budget_bytes = 4096, feasible = true,
      min_reachable_peak_bytes = 3000, recompute_seconds = 1.25e-3,
      step_seconds = 0.02, preference = budget, segments = 7>,
    memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 55.0,
      offloaded_regions = 2, predicted_peak_bytes = 4000,
      prefetched_early = 1, stall_seconds = 0.0, transfer_seconds = 3.0e-4,
      d2h_bandwidth_gbps = 50.0, offload_seconds = 3.2e-4, held_regions = 1>} {
  return %x : tensor<4xf32>
}

// A preference plan without a budget (-1), every preference keyword.
// CHECK-LABEL: func.func @preferences
// CHECK-SAME: budget_bytes = -1, feasible = false
// CHECK-SAME: preference = memory
func.func @preferences(%x: tensor<4xf32>) -> tensor<4xf32> attributes {
    memopt.plan = #memopt.plan<baseline_peak_bytes = 1, planned_peak_bytes = 1,
      budget_bytes = -1, feasible = false, min_reachable_peak_bytes = 1,
      recompute_seconds = 0.0, step_seconds = 0.0, preference = memory,
      segments = 0>} {
  return %x : tensor<4xf32>
}
