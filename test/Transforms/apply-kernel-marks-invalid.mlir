// RUN: memopt-opt %s --memopt-apply-kernel-marks="file=%S/Inputs/kernel-marks-two-devices.txt" -verify-diagnostics -o /dev/null

// One file, two devices' marks: which GPU trains is not known, so no mark
// is taken.
// expected-error @below {{holds marks of more than one device ('cuda gpu-a' and 'cuda gpu-b'); keep the lines of the device that will train}}
module attributes {memopt.device = "cuda"} {
  func.func @conv(%x: tensor<2x16x8x8xf32>) -> tensor<2x16x8x8xf32> {
    %w = memopt.param "c.weight" : tensor<16x16x3x3xf32>
    %nb = memopt.get_attr "c.bias" : !memopt.script<"Tensor?">
    %y = memopt.op "aten::conv2d"(%x, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, [1, 1], [1, 1], [1, 1], 1]
        : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>, !memopt.script<"Tensor?">) -> tensor<2x16x8x8xf32>
    return %y : tensor<2x16x8x8xf32>
  }
}
