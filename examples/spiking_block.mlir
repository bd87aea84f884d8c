// A conv -> batch-norm -> LIF-spike block of a spiking network, as the
// importer writes it, with its first two ops placed in a checkpoint region
// whose saved input (the previous block's spikes) is bit-compressed.
func.func @forward(%spikes: tensor<4x16x24x24xf32>) -> tensor<4x16x24x24xf32> {
  %w = memopt.param "features.3.conv.weight" : tensor<16x16x3x3xf32>
  %gamma = memopt.param "features.3.bn.weight" : tensor<16xf32>
  %beta = memopt.param "features.3.bn.bias" : tensor<16xf32>
  %mean = memopt.buffer "features.3.bn.running_mean" : tensor<16xf32>
  %var = memopt.buffer "features.3.bn.running_var" : tensor<16xf32>
  %training = memopt.get_attr "features.3.bn.training" : i1
  %y = memopt.checkpoint "features.3" (%spikes, %w, %gamma, %beta, %mean, %var)
      policies [#memopt.compress<bit>, #memopt.keep, #memopt.keep, #memopt.keep, #memopt.keep, #memopt.keep]
      : (tensor<4x16x24x24xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x24x24xf32> {
  ^bb0(%x: tensor<4x16x24x24xf32>, %cw: tensor<16x16x3x3xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>):
    %c = memopt.op "aten::conv2d"(%x, %cw) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1]
        : (tensor<4x16x24x24xf32>, tensor<16x16x3x3xf32>) -> tensor<4x16x24x24xf32>
    %n = memopt.op "aten::batch_norm"(%c, %g, %b, %m, %v) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, true, 1.000000e-01, 1.000000e-05, true]
        {mutates = array<i64: 3, 4>}
        : (tensor<4x16x24x24xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16x24x24xf32>
    memopt.yield %n : tensor<4x16x24x24xf32>
  }
  %s = memopt.op "aten::ge"(%y) [#memopt.arg<0>, 1.000000e+00] : (tensor<4x16x24x24xf32>) -> tensor<4x16x24x24xi1>
  %f = memopt.op "aten::to"(%s) [#memopt.arg<0>, 6, false, false, #memopt.none] : (tensor<4x16x24x24xi1>) -> tensor<4x16x24x24xf32>
  return %f : tensor<4x16x24x24xf32>
}
