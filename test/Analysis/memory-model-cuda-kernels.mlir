// RUN: memopt-opt %s -split-input-file -memopt-test-memory-model -o /dev/null | FileCheck %s

// A CUDA plan counts no CPU kernel's buffers: the workspace formulas are
// oneDNN's and ATen's CPU batch-norm's, and a GPU's convolution buffers
// depend on the algorithm cuDNN picks there. Only what a marks file
// measured on the GPU (`high_water`, memopt-compile --kernel-marks) adds to
// the results and gradients. memory-model-workspace.mlir's @two_convs
// (CPU: 25600 / 33792 forward, 58368 / 50176 backward) on CUDA, no marks:
// every size is a whole number of 512-byte blocks.
//   forward  conv1 y1 8192; relu r 8192 (y1 dies); conv2 y2 8192   = 16384
//   backward loss gradient 8192, then conv2's input and weight
//            gradients 8192 + 9216                                 = 41984
// CHECK-LABEL: memory-model @two_convs
// CHECK: forward aten::conv2d live 8192
// CHECK-NEXT: forward aten::relu live 16384
// CHECK-NEXT: forward aten::conv2d live 16384
// CHECK-NEXT: backward aten::conv2d live 41984
// CHECK: peak 41984 at backward aten::conv2d
module attributes {memopt.device = "cuda"} {
  func.func @two_convs(%x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
    %w1 = memopt.param "c1.weight" : tensor<16x16x3x3xf32>
    %nb = memopt.get_attr "c1.bias" : !memopt.script<"Tensor?">
    %y1 = memopt.op "aten::conv2d"(%x, %w1, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
    %r = memopt.op "aten::relu"(%y1) [#memopt.arg<0>] : (tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
    %w2 = memopt.param "c2.weight" : tensor<16x16x3x3xf32>
    %y2 = memopt.op "aten::conv2d"(%r, %w2, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
    return %y2 : tensor<2x16x8x8xf32>
  }
}

// -----

// With marks (memory-model-high-water.mlir's), CUDA takes them as the CPU
// does: before + mark.
// CHECK-LABEL: memory-model @two_convs
// CHECK: forward aten::conv2d live 30000
// CHECK-NEXT: forward aten::relu live 16384
// CHECK-NEXT: forward aten::conv2d live 28192
// CHECK-NEXT: backward aten::conv2d live 64576
// CHECK-NEXT: backward aten::relu live 40960
// CHECK-NEXT: backward aten::conv2d live 54576
// CHECK: peak 64576 at backward aten::conv2d
module attributes {memopt.device = "cuda"} {
  func.func @two_convs(%x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
    %w1 = memopt.param "c1.weight" : tensor<16x16x3x3xf32>
    %nb = memopt.get_attr "c1.bias" : !memopt.script<"Tensor?">
    %y1 = memopt.op "aten::conv2d"(%x, %w1, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        {high_water = #memopt.high_water<forward = 30000, backward = [-1, 1, 30000, 3]>}
        : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
    %r = memopt.op "aten::relu"(%y1) [#memopt.arg<0>] : (tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32>
    %w2 = memopt.param "c2.weight" : tensor<16x16x3x3xf32>
    %y2 = memopt.op "aten::conv2d"(%r, %w2, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        {high_water = #memopt.high_water<forward = 20000, backward = [-1, 1, 2, 40000]>}
        : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
    return %y2 : tensor<2x16x8x8xf32>
  }
}

// -----

// cuDNN's batch-norm backward needs no buffer beside the input gradient
// (measured on an H100, docs/gpu.md); the CPU's needs an input-sized one
// (memory-model-batch-norm-backward.mlir: 10272 there, with the table's
// CPU rule). The statistics and the affine gradients (4 floats each) take
// a 512-byte block each.
//   forward:  conv y 2048, batch-norm z 2048 + 2 x 512            = 5120
//   backward: loss gradient of z 2048                              = 7168
//             batch-norm: + grad y 2048 + grad weight and bias 2 x 512
//                                                                  = 10240
// CHECK-LABEL: memory-model @bn
// CHECK: forward aten::batch_norm live 5120
// CHECK: backward aten::batch_norm live 10240
module attributes {memopt.device = "cuda"} {
  func.func @bn(%x: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
    %cw = memopt.param "conv.weight" : tensor<4x4x1x1xf32>
    %y = memopt.op "aten::conv2d"(%x, %cw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [0, 0], [1, 1], 1] {overload = ""} : (tensor<2x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x8x8xf32>
    %w = memopt.param "bn.weight" : tensor<4xf32>
    %b = memopt.param "bn.bias" : tensor<4xf32>
    %m = memopt.buffer "bn.running_mean" : tensor<4xf32>
    %v = memopt.buffer "bn.running_var" : tensor<4xf32>
    %z = memopt.op "aten::batch_norm"(%y, %w, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 0.1, 1.0e-05, true] {mutates = array<i64: 3, 4>, overload = ""} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
    return %z : tensor<2x4x8x8xf32>
  }
}
