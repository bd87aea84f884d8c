// RUN: memopt-opt %s --memopt-apply-kernel-marks="file=%S/Inputs/kernel-marks-cuda.txt" | FileCheck %s --check-prefix=IR
// RUN: memopt-opt %s --memopt-apply-kernel-marks="file=%S/Inputs/kernel-marks-cuda.txt" --memopt-test-memory-model -o /dev/null | FileCheck %s
// RUN: rm -f %t.jsonl && memopt-opt %s --memopt-apply-kernel-marks="requests=%t.jsonl" -o /dev/null && FileCheck %s --check-prefix=REQ < %t.jsonl
// RUN: not memopt-opt %s --memopt-apply-kernel-marks="file=%S/Inputs/kernel-marks-cpu.txt" -o /dev/null 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: not memopt-opt %s --memopt-apply-kernel-marks="file=%S/Inputs/absent.txt" -o /dev/null 2>&1 | FileCheck %s --check-prefix=ABSENT
// RUN: not memopt-opt %s --memopt-apply-kernel-marks -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOTHING

// Marks measured on a GPU (Inputs/kernel-marks-cuda.txt: one call, the
// forward and the backwards of gradient masks 2 and 3) put on a CUDA
// module's convolutions, as memopt-compile --kernel-marks does. Both
// convolutions make the same call; c1's input is the model's (mask 2:
// weight only), c2's needs a gradient too (mask 3).
// IR-COUNT-2: high_water = #memopt.high_water<forward = 30000, backward = [-1, 1, 30000, 40000]>
//
// The CUDA memory model then prices them (memory-model-cuda-kernels.mlir):
//   forward  conv1 30000; relu 16384; conv2 8192 (r) + 30000       = 38192
//   backward conv2 24576 + backward[input|weight] 40000            = 64576
//            conv1 24576 + backward[weight] 30000                  = 54576
// CHECK-LABEL: memory-model @two_convs
// CHECK: forward aten::conv2d live 30000
// CHECK-NEXT: forward aten::relu live 16384
// CHECK-NEXT: forward aten::conv2d live 38192
// CHECK-NEXT: backward aten::conv2d live 64576
// CHECK-NEXT: backward aten::relu live 40960
// CHECK-NEXT: backward aten::conv2d live 54576
// CHECK: peak 64576 at backward aten::conv2d
//
// Without marks, the call is requested once, with both masks and the
// forward, as the GPU's probe reads it.
// REQ: {"bias":false,"channels_last":false,"dilation":[1,1],"dtype":"float32","form":"convolution","forward":true,"groups":1,"input":[2,16,8,8],"key":"0:0:[2,16,8,8,][16,16,3,3,]0[1,1,][1,1,][1,1,][]:0:1:0","kind":"convolution","masks":[2,3],"op":"aten::conv2d","output_padding":[],"padding":[1,1],"padding_mode":"","stride":[1,1],"transposed":false,"weight":[16,16,3,3]}
// REQ-NOT: "key"
//
// CPU: error: {{.*}}kernel-marks-cpu.txt' holds marks measured on 'cpu torch=2.6 threads=1', not on a cuda device
// ABSENT: error: cannot read the kernel marks file '{{.*}}absent.txt'
// NOTHING: error: memopt-apply-kernel-marks needs file= (a marks file) or requests=
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
