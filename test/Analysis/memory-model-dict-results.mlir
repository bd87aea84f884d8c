// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0 accumulate-in-place=1" -verify-diagnostics -o /dev/null | FileCheck %s
// RUN: memopt-opt %s -memopt-test-memory-model="kernel-workspaces=0 accumulate-in-place=0" -verify-diagnostics -o /dev/null | FileCheck %s --check-prefix=V113

// A segmentation head's result: two resampled maps returned in a dict
// (what memopt's importer builds from `result["out"] = ...`). Resampling
// has saved-tensor rows (it keeps nothing for backward, and it is not an
// unknown op: no warning), and a dict's values are held as a tuple's, so
// each gets its loss gradient: backward starts from the two results
// (8192 B each) and their two gradients, plus the first gradient of the
// shared input (2048 B); the second one (2048 B) is live before the sum.
// PyTorch 2.x adds it into the first in place; 1.13 makes a third buffer
// while both live (+2048 B at the bilinear backward). Both measured in
// eager (the same figures plus the 2048 B the Python frame kept).
// Without the dict's row, backward was modelled with no gradient at all.
// CHECK-LABEL: memory-model @dict_result
// CHECK: forward aten::mul live 2048
// CHECK: forward aten::upsample_bilinear2d live 10240
// CHECK: forward aten::upsample_nearest2d live 18432
// CHECK: backward aten::upsample_nearest2d live 34816
// CHECK: backward aten::upsample_bilinear2d live 36864
// CHECK: backward aten::mul live 36880
// CHECK: end-of-forward 16384
// CHECK-NOT: unknown
// V113: backward aten::upsample_nearest2d live 34816
// V113: backward aten::upsample_bilinear2d live 38912
// V113: backward aten::mul live 36880
// V113: peak 38912 at backward aten::upsample_bilinear2d
func.func @dict_result(%x: tensor<2x4x8x8xf32>) -> !memopt.script<"Dict(str, Tensor)"> {
  %w = memopt.param "scale" : tensor<4x1x1xf32>
  %a = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"}
      : (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %u = memopt.op "aten::upsample_bilinear2d"(%a) [#memopt.arg<0>, [16, 16], false, #memopt.none] {overload = "vec"}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x16x16xf32>
  %n = memopt.op "aten::upsample_nearest2d"(%a) [#memopt.arg<0>, [16, 16], #memopt.none] {overload = "vec"}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x16x16xf32>
  %d = memopt.op "prim::DictConstruct"(%u, %n) ["out", #memopt.arg<0>, "aux", #memopt.arg<1>]
      : (tensor<2x4x16x16xf32>, tensor<2x4x16x16xf32>) -> !memopt.script<"Dict(str, Tensor)">
  return %d : !memopt.script<"Dict(str, Tensor)">
}
