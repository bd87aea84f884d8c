// RUN: memopt-opt %s -split-input-file -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s
// Data-parallel training (`memopt.world_size`, memopt-compile --world-size):
// each process holds DistributedDataParallel's gradient buckets, one flat
// copy of every trainable parameter's gradient allocated when DDP wraps the
// model. They are resident (allocated before any step) and change nothing
// in the step's peak, which is per process.

// conv -> batch_norm -> relu_ of memory-model-grad-buffers.mlir on 4
// processes, .grad resident: trainable parameters 480 bytes (conv weight
// 432, bias 16, bn gamma and beta 16 each), so 2528 + 480 resident; the
// running statistics (buffers) and the frozen parameter get no bucket.
// CHECK-LABEL: memory-model @conv_bn_relu
// CHECK:      backward aten::conv2d live 6592
// CHECK:      resident 3072
// CHECK-NEXT: gradient-buckets 480
// CHECK-NEXT: peak 10304 at backward aten::batch_norm
module attributes {memopt.grad_buffers = "resident", memopt.world_size = 4 : i64} {
func.func @conv_bn_relu(%x: tensor<2x3x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %w = memopt.param "conv.weight" : tensor<4x3x3x3xf32>
  %b = memopt.param "conv.bias" : tensor<4xf32>
  %g = memopt.param "bn.weight" : tensor<4xf32>
  %be = memopt.param "bn.bias" : tensor<4xf32>
  %s = memopt.param "scale" frozen : tensor<16xf32>
  %m = memopt.buffer "bn.running_mean" : tensor<4xf32>
  %v = memopt.buffer "bn.running_var" : tensor<4xf32>
  %y = memopt.op "aten::conv2d"(%x, %w, %b)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %z = memopt.op "aten::batch_norm"(%y, %g, %be, %m, %v)
      [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-5, true]
      {mutates = array<i64: 3, 4>}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %r = memopt.op "aten::relu_"(%z) [#memopt.arg<0>] {mutates = array<i64: 0>, views = array<i64: 0>}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %r : tensor<2x4x8x8xf32>
}
}

// -----

// One process (world size 1): no buckets, the line is not printed
// (w, its .grad and x: 1536).
// CHECK-LABEL: memory-model @one_process
// CHECK:      resident 1536
// CHECK-NEXT: peak
module attributes {memopt.world_size = 1 : i64} {
func.func @one_process(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "w" : tensor<8x16xf32>
  %y = memopt.op "aten::mul"(%w, %x) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
}

// -----

// With .grad allocated in backward the buckets are still resident; a stamp
// on the function overrides the module's (w, x and w's bucket: 1536).
// CHECK-LABEL: memory-model @allocated
// CHECK:      resident 1536
// CHECK-NEXT: gradient-buckets 512
module attributes {memopt.grad_buffers = "allocated", memopt.world_size = 8 : i64} {
func.func @allocated(%x: tensor<8x16xf32>) -> tensor<8x16xf32> attributes {memopt.world_size = 2 : i64} {
  %w = memopt.param "w" : tensor<8x16xf32>
  %y = memopt.op "aten::mul"(%w, %x) [#memopt.arg<0>, #memopt.arg<1>]
      : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
}
