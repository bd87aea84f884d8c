// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// Region "a" offloads its 4x256xf32 input %h (4096 bytes). Its copy to the
// host reads %h on the device while the ops after the region run: with
// offload_held_for = 2, %h stays live through the next two ops (the two
// sigmoids), then is freed; without it, it is freed as "a" returns.
// CHECK-LABEL: memory-model @released
// CHECK: forward checkpoint "a" live 8192
// CHECK-NEXT: forward aten::sigmoid live 8192
// CHECK-NEXT: forward aten::sigmoid live 8192
// CHECK-NEXT: forward aten::sigmoid live 12288
// CHECK: end-of-forward 12288
// CHECK-LABEL: memory-model @held
// CHECK: forward checkpoint "a" live 8192
// CHECK-NEXT: forward aten::sigmoid live 12288
// CHECK-NEXT: forward aten::sigmoid live 12288
// CHECK-NEXT: forward aten::sigmoid live 12288
// CHECK: end-of-forward 12288
func.func @released(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %a = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%i: tensor<4x256xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %r : tensor<4x256xf32>
  }
  %s1 = memopt.op "aten::sigmoid"(%a) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
  %s2 = memopt.op "aten::sigmoid"(%s1) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
  %s3 = memopt.op "aten::sigmoid"(%s2) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
  return %s3 : tensor<4x256xf32>
}
func.func @held(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %a = memopt.checkpoint "a" (%h) policies [#memopt.offload<host>] {offload_held_for = 2}
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%i: tensor<4x256xf32>):
    %r = memopt.op "aten::sigmoid"(%i) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %r : tensor<4x256xf32>
  }
  %s1 = memopt.op "aten::sigmoid"(%a) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
  %s2 = memopt.op "aten::sigmoid"(%s1) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
  %s3 = memopt.op "aten::sigmoid"(%s2) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
  return %s3 : tensor<4x256xf32>
}
