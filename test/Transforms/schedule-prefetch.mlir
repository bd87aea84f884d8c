// RUN: memopt-opt %s -memopt-schedule-prefetch="bandwidth=1000 d2h-bandwidth=1000" | FileCheck %s --check-prefix=FAST
// RUN: memopt-opt %s -memopt-schedule-prefetch="bandwidth=0.01 d2h-bandwidth=0.01" | FileCheck %s --check-prefix=SLOW
// RUN: memopt-opt %s -memopt-schedule-prefetch="bandwidth=1000 d2h-bandwidth=0.01" | FileCheck %s --check-prefix=SLOWOUT
// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s --check-prefix=UNSCHEDULED

// Chains of four regions a..d, each recomputing a sigmoid of a 64x1024xf32
// input (256 KiB) that it offloads to the host. Backward runs d, c, b, a.
// Every copy goes through one side stream, in order.
//
// @headroom: the peak is the 16 MiB weight gradient of the first linear, so
// early prefetches cost no peak and only time decides. At 1000 GB/s one
// region's backward hides a transfer: each region is prefetched as the next
// one starts backward; d, the first in backward, has no earlier trigger and
// waits for its own copy. Each copy to the host is done before the next op
// ends: every input is held through one op.
// FAST-LABEL: func.func @headroom
// FAST-SAME: memopt.prefetch_schedule = #memopt.prefetch<bandwidth_gbps = 1.000000e+03, offloaded_regions = 4, predicted_peak_bytes = 17563648, prefetched_early = 3,
// FAST-SAME: held_regions = 0>
// FAST: memopt.checkpoint "a"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "b"}
// FAST: memopt.checkpoint "b"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "c"}
// FAST: memopt.checkpoint "c"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "d"}
// FAST: memopt.checkpoint "d"({{.*}}) policies [#memopt.offload<host>] :
//
// At 0.01 GB/s each copy takes 26 ms and nothing hides it. The copies
// queue one after another on the side stream whichever region triggers
// them, so triggering earlier gains no time: each region keeps the nearest
// trigger (its bytes come back no earlier than needed). Backward waits for
// the four copies back and for the copies to the host still queued when
// it starts (about 0.1 s each way: stall 0.2 s). In forward, a's copy
// queues behind nothing but outlasts the three regions after it; b's, c's
// the rest of the block.
// SLOW-LABEL: func.func @headroom
// SLOW-SAME: prefetched_early = 3, stall_seconds = 0.2
// SLOW-SAME: offload_seconds = 0.1
// SLOW-SAME: held_regions = 2>
// SLOW: memopt.checkpoint "a"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 3 : i64, prefetch_at = "b"}
// SLOW: memopt.checkpoint "b"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 2 : i64, prefetch_at = "c"}
// SLOW: memopt.checkpoint "c"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "d"}
//
// A slow device-to-host link with a fast one back: the inputs are held as
// long as at 0.01 GB/s, and backward's first prefetch (d's own) queues
// behind the copies to the host still running, so the wait is theirs
// (about 0.1 s) while the copies back take 41 us.
// SLOWOUT-LABEL: func.func @headroom
// SLOWOUT-SAME: stall_seconds = 0.1
// SLOWOUT-SAME: transfer_seconds = 4.1
// SLOWOUT-SAME: held_regions = 2>
// SLOWOUT: memopt.checkpoint "a"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 3 : i64, prefetch_at = "b"}
//
// @tight: the peak is reached in the regions' own backward, so a prefetch
// one region early would raise it; only c (prefetched during d's backward,
// below the peak) moves, at any bandwidth, and the peak stays that of the
// unscheduled function.
// FAST-LABEL: func.func @tight
// FAST-SAME: predicted_peak_bytes = 1572864, prefetched_early = 1,
// FAST: memopt.checkpoint "a"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64} :
// FAST: memopt.checkpoint "b"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64} :
// FAST: memopt.checkpoint "c"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "d"}
// SLOW-LABEL: func.func @tight
// SLOW-SAME: predicted_peak_bytes = 1572864, prefetched_early = 1,
// UNSCHEDULED-LABEL: memory-model @tight
// UNSCHEDULED: peak 1572864
//
// @labels: the two regions labelled "x" cannot be named, so even at 1000
// GB/s a's trigger is the next nameable region, d.
// FAST-LABEL: func.func @labels
// FAST: memopt.checkpoint "a"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "d"}
// FAST: memopt.checkpoint "x"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "d"}
// FAST: memopt.checkpoint "x"({{.*}}) policies [#memopt.offload<host>] {offload_held_for = 1 : i64, prefetch_at = "d"}
//
// @no_offload: nothing to schedule, no summary.
// FAST-LABEL: func.func @no_offload
// FAST-NOT: memopt.prefetch_schedule
// FAST-NOT: prefetch_at
// FAST-NOT: offload_held_for

func.func @headroom(%x: tensor<64x4096xf32>) -> tensor<64x1024xf32> {
  %w = memopt.param "fc.weight" : tensor<1024x4096xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<64x4096xf32>, tensor<1024x4096xf32>) -> tensor<64x1024xf32>
  %r0 = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r1 = memopt.checkpoint "b" (%r0) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r2 = memopt.checkpoint "c" (%r1) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r3 = memopt.checkpoint "d" (%r2) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  return %r3 : tensor<64x1024xf32>
}
func.func @tight(%x: tensor<64x16xf32>) -> tensor<64x1024xf32> {
  %w = memopt.param "fc.weight" : tensor<1024x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<64x16xf32>, tensor<1024x16xf32>) -> tensor<64x1024xf32>
  %r0 = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r1 = memopt.checkpoint "b" (%r0) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r2 = memopt.checkpoint "c" (%r1) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r3 = memopt.checkpoint "d" (%r2) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  return %r3 : tensor<64x1024xf32>
}
func.func @labels(%x: tensor<64x4096xf32>) -> tensor<64x1024xf32> {
  %w = memopt.param "fc.weight" : tensor<1024x4096xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<64x4096xf32>, tensor<1024x4096xf32>) -> tensor<64x1024xf32>
  %r0 = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r1 = memopt.checkpoint "x" (%r0) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r2 = memopt.checkpoint "x" (%r1) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  %r3 = memopt.checkpoint "d" (%r2) policies [#memopt.offload<host>]
      : (tensor<64x1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%i: tensor<64x1024xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x1024xf32>) -> tensor<64x1024xf32>
    memopt.yield %r : tensor<64x1024xf32>
  }
  return %r3 : tensor<64x1024xf32>
}
func.func @no_offload(%x: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %a = memopt.checkpoint "a" (%x) policies [#memopt.keep] : (tensor<64x16xf32>) -> tensor<64x16xf32> {
  ^bb0(%i: tensor<64x16xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<64x16xf32>) -> tensor<64x16xf32>
    memopt.yield %r : tensor<64x16xf32>
  }
  return %a : tensor<64x16xf32>
}
