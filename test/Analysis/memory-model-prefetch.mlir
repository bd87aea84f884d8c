// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// Two regions "a" and "b", each saving only its 4x256xf32 input (4096 bytes)
// offloaded to the host. Without a schedule, a's input comes back when a's
// own backward starts; with prefetch_at = "b" it comes back as b's backward
// starts, so it is live 4096 bytes earlier: through b's recompute and
// backward. From a's recompute on, both timelines agree (the prefetched
// buffer is the one a's backward uses).
// CHECK-LABEL: memory-model @late
// CHECK: forward checkpoint "b" live 8192
// CHECK-NEXT: recompute aten::sigmoid live 16384
// CHECK-NEXT: backward aten::sigmoid live 20480
// CHECK-NEXT: backward checkpoint "b" live 16384
// CHECK-NEXT: recompute aten::sigmoid live 20480
// CHECK-NEXT: backward aten::sigmoid live 24576
// CHECK-NEXT: backward checkpoint "a" live 20480
// CHECK: end-of-forward 4096
// CHECK: peak 28672 at backward aten::linear
// CHECK-LABEL: memory-model @early
// CHECK: forward checkpoint "b" live 8192
// CHECK-NEXT: recompute aten::sigmoid live 20480
// CHECK-NEXT: backward aten::sigmoid live 24576
// CHECK-NEXT: backward checkpoint "b" live 20480
// CHECK-NEXT: recompute aten::sigmoid live 20480
// CHECK-NEXT: backward aten::sigmoid live 24576
// CHECK-NEXT: backward checkpoint "a" live 20480
// CHECK: end-of-forward 4096
// CHECK: peak 28672 at backward aten::linear
func.func @late(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %a = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%i: tensor<4x256xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %r : tensor<4x256xf32>
  }
  %b = memopt.checkpoint "b" (%a) policies [#memopt.offload<host>]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%i: tensor<4x256xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %r : tensor<4x256xf32>
  }
  return %b : tensor<4x256xf32>
}
func.func @early(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %a = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>] {prefetch_at = "b"}
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%i: tensor<4x256xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %r : tensor<4x256xf32>
  }
  %b = memopt.checkpoint "b" (%a) policies [#memopt.offload<host>]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%i: tensor<4x256xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %r : tensor<4x256xf32>
  }
  return %b : tensor<4x256xf32>
}
