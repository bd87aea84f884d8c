// saved_input has a packed form only for the int[] padding overload of
// convolutions and for aten::linear.
// RUN: %python -c "import torch; torch.jit.script(torch.nn.Conv2d(3, 4, 3, padding=1)).save('%t.pt')"
// RUN: sed -e 's|@SOURCE@|%t.pt|g' %s | memopt-translate --export-torchscript -split-input-file -verify-diagnostics -o %t.out

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x3x4x4xf32>) -> tensor<2x4x4x4xf32> {
    %w = memopt.param "weight" : tensor<4x3x3x3xf32>
    // expected-error@+1 {{cannot export 'aten::conv2d' with saved_input = #memopt.compress<bit>: only the int[] padding overload has a packed form, not the string padding ('same', 'valid') one}}
    %y = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], "same", [1, 1], 1] {overload = "padding", saved_input = #memopt.compress<bit>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    return %y : tensor<2x4x4x4xf32>
  }
}

// -----

// Without a recorded overload, a string padding argument says the same.
module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x3x4x4xf32>) -> tensor<2x4x4x4xf32> {
    %w = memopt.param "weight" : tensor<4x3x3x3xf32>
    // expected-error@+1 {{only the int[] padding overload has a packed form}}
    %y = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], "valid", [1, 1], 1] {saved_input = #memopt.compress<bool>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    return %y : tensor<2x4x4x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x3x4x4xf32>) -> tensor<2x4x4x4xf32> {
    %w = memopt.param "weight" : tensor<4x3x3x3xf32>
    // expected-error@+1 {{cannot export 'aten::conv2d' with saved_input = #memopt.compress<bit>: expected 7 arguments in schema order, got 3}}
    %y = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {saved_input = #memopt.compress<bit>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    return %y : tensor<2x4x4x4xf32>
  }
}

// -----

module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<2x3x4x4xf32>) -> tensor<2x4x4x4xf32> {
    %w = memopt.param "weight" : tensor<4x3x3x3xf32>
    // expected-error@+1 {{do not match memopt::conv_packed(}}
    %y = memopt.op "aten::conv2d"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none, [1, 1], [1, 1], [1, 1], 1.5] {saved_input = #memopt.compress<bit>} : (tensor<2x3x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
    return %y : tensor<2x4x4x4xf32>
  }
}
