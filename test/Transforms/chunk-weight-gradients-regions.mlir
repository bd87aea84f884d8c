// RUN: memopt-opt %s --memopt-insert-checkpoints="prefer=speed checkpoint=fc" | FileCheck %s

// A marked linear layer the plan moves into a checkpoint region loses the
// mark: the region's recompute hands the whole gradient to the runtime.
// CHECK-LABEL: func.func @in_region
// CHECK: memopt.checkpoint
// CHECK-NOT: backward =
// CHECK: memopt.yield
func.func @in_region(%x: tensor<64x8192xf32>) -> tensor<64x1024xf32> {
  %w = memopt.param "fc.weight" : tensor<1024x8192xf32> loc("fc"("model.py":3:5))
  %y = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {backward = #memopt.backward<weight_rows>, overload = ""} : (tensor<64x8192xf32>, tensor<1024x8192xf32>) -> tensor<64x1024xf32> loc("fc"("model.py":3:9))
  %t = memopt.op "aten::tanh"(%y) [#memopt.arg<0>] {overload = ""} : (tensor<64x1024xf32>) -> tensor<64x1024xf32> loc("act"("model.py":4:9))
  return %t : tensor<64x1024xf32>
}
