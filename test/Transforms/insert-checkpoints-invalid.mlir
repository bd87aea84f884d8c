// RUN: memopt-opt %s --verify-diagnostics --memopt-insert-checkpoints="budget=10%"
// RUN: not memopt-opt %s --memopt-insert-checkpoints="budget=lots" 2>&1 | FileCheck %s --check-prefix=BADBUDGET
// RUN: not memopt-opt %s --memopt-insert-checkpoints="prefer=fast" 2>&1 | FileCheck %s --check-prefix=PREFER
// RUN: not memopt-opt %s --memopt-insert-checkpoints="device=tpu" 2>&1 | FileCheck %s --check-prefix=DEVICE
// RUN: not memopt-opt %s --memopt-insert-checkpoints="checkpoint=features.3" 2>&1 | FileCheck %s --check-prefix=PATH
// RUN: not memopt-opt %s --memopt-insert-checkpoints="no-checkpoint=head" 2>&1 | FileCheck %s --check-prefix=NOPATH

// BADBUDGET: error: invalid --budget 'lots': unknown unit 'lots' (B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB) (expected bytes such as 123456, 800MB or 1.5GiB, or a percentage of the baseline peak such as 40%)
// PREFER: error: unknown --prefer 'fast' (expected speed, balanced or memory)
// DEVICE: error: unknown --device 'tpu' (expected cpu or cuda)
// PATH: error: module path 'features.3' names no operation of @tiny (--checkpoint)
// NOPATH: error: module path 'head' names no operation of @tiny (--no-checkpoint)

// A budget below what recomputation can reach is an error naming the
// smallest reachable peak.
// expected-error @+1 {{is infeasible for @tiny: the smallest reachable peak is}}
func.func @tiny(%x: tensor<4096x64xf32>) -> tensor<4096x64xf32> {
  %w0 = memopt.param "blocks.0.fc.weight" : tensor<64x64xf32> loc("blocks.0.fc"("model.py":10:5))
  %h0 = memopt.op "aten::linear"(%x, %w0) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.0.fc"("model.py":10:9))
  %r0 = memopt.op "aten::tanh"(%h0) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.0.act"("model.py":10:20))
  %w1 = memopt.param "blocks.1.fc.weight" : tensor<64x64xf32> loc("blocks.1.fc"("model.py":11:5))
  %h1 = memopt.op "aten::linear"(%r0, %w1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = ""} : (tensor<4096x64xf32>, tensor<64x64xf32>) -> tensor<4096x64xf32> loc("blocks.1.fc"("model.py":11:9))
  %r1 = memopt.op "aten::tanh"(%h1) [#memopt.arg<0>] {overload = ""} : (tensor<4096x64xf32>) -> tensor<4096x64xf32> loc("blocks.1.act"("model.py":11:20))
  return %r1 : tensor<4096x64xf32>
}
