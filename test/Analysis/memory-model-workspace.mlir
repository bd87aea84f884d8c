// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model="threads=2" -o /dev/null | FileCheck %s --check-prefix=THREADS
// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s --check-prefix=NOWS

// oneDNN convolutions (PyTorch 1.13, CPU) copy their operands into blocked
// layouts around each call. Activations are 2x16x8x8xf32 = 8192 bytes, the
// weights 16x16x3x3xf32 = 9216; 16 channels need no padding. Measured on
// this model with the counting allocator: 58368 bytes.
//   forward  conv1: +src copy 8192 +weight copy 9216 +blocked dst 8192  = 25600
//                   then the plain result (8192) replaces them
//            relu:  + r, then y1 dies (relu saves its result)           = 16384
//            conv2: 8192 + 25600                                        = 33792
//   end of forward: r (saved), y2 (returned)                            = 16384
//   backward + loss gradient                                            = 24576
//            conv2 data:    +gy copy +weight copy +blocked gx           + 25600
//                  weights: +gx +gy copy +x copy +blocked gw            + 33792
//                                                                 = 58368 (peak)
//            relu:  y2 + loss gradient (held by the caller) + r
//                   + grad r + grad y1                                  = 40960
//            conv1 weights only (x needs no grad): 24576 + 25600        = 50176
// CHECK-LABEL: memory-model @two_convs
// CHECK: forward aten::conv2d live 25600
// CHECK-NEXT: forward aten::relu live 16384
// CHECK-NEXT: forward aten::conv2d live 33792
// CHECK-NEXT: backward aten::conv2d live 58368
// CHECK-NEXT: backward aten::relu live 40960
// CHECK-NEXT: backward aten::conv2d live 50176
// CHECK: end-of-forward 16384
// CHECK: peak 58368 at backward aten::conv2d
// Without workspaces only the results and gradients count.
// NOWS-LABEL: memory-model @two_convs
// NOWS: forward aten::conv2d live 8192
// NOWS: backward aten::conv2d live 41984
// NOWS: peak 41984
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

// An unstrided 1x1 convolution on a batch under 16 runs without oneDNN on
// one thread (no copies: result 2x32x8x8xf32 = 16384, then the loss and
// weight gradients, 16384 + 2048), with it on two (measured: 59392).
//   threads=2 forward:  +src 8192 +weight 2048 +dst 16384, then +result
//                       while dst lives                        = 32768
//             backward: 16384 (y) + 16384 (loss gradient) + gy copy 16384
//                       + x copy 8192 + blocked gw 2048, or later blocked
//                       gw + gw                                = 59392
// CHECK-LABEL: memory-model @pointwise
// CHECK: forward aten::conv2d live 16384
// CHECK: backward aten::conv2d live 34816
// THREADS-LABEL: memory-model @pointwise
// THREADS: forward aten::conv2d live 32768
// THREADS: backward aten::conv2d live 59392
func.func @pointwise(%x: tensor<2x16x8x8xf32>) -> tensor<2x32x8x8xf32> {
  %w = memopt.param "c.weight" : tensor<32x16x1x1xf32>
  %nb = memopt.get_attr "c.bias" : !memopt.script<"Tensor?">
  %y = memopt.op "aten::conv2d"(%x, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [0, 0], [1, 1], 1]
      : (tensor<2x16x8x8xf32>, tensor<32x16x1x1xf32>, !memopt.script<"Tensor?">) -> tensor<2x32x8x8xf32>
  return %y : tensor<2x32x8x8xf32>
}

// Depthwise 3x3 on 24 channels: oneDNN pads the channels to 32 in its
// blocked copies (2x32x8x8xf32 = 16384; weights 32x9xf32 = 1152), the
// plain result is 2x24x8x8xf32 = 12288.
//   forward: src copy 16384 + weight copy 1152 + dst 16384      = 33920
// CHECK-LABEL: memory-model @depthwise
// CHECK: forward aten::conv2d live 33920
func.func @depthwise(%x: tensor<2x24x8x8xf32>) -> tensor<2x24x8x8xf32> {
  %w = memopt.param "c.weight" : tensor<24x1x3x3xf32>
  %nb = memopt.get_attr "c.bias" : !memopt.script<"Tensor?">
  %y = memopt.op "aten::conv2d"(%x, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 24]
      : (tensor<2x24x8x8xf32>, tensor<24x1x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x24x8x8xf32>
  return %y : tensor<2x24x8x8xf32>
}
