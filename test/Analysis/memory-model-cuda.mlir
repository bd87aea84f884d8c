// RUN: memopt-opt %s -split-input-file -memopt-test-memory-model="kernel-workspaces=0" -o /dev/null | FileCheck %s
// The CUDA side of the model (`memopt-compile --device cuda` stamps the
// module `memopt.device = "cuda"`): every buffer is a block of the caching
// allocator, a multiple of 512 bytes, and dropout keeps a bool mask (a byte
// per value) where the CPU keeps float noise. Activations are 10x100xf32 =
// 4000 bytes: 4096 as a CUDA block; the mask is 1000 bytes: 1024.
//
// CPU:  linear + h 4000; relu + a 4000 (h dies after it); dropout + d 4000
//       + noise 4000.
// CHECK-LABEL: memory-model @dropout_mlp
// CHECK-DAG: saved aten::dropout 4000
// CHECK-DAG: saved aten::relu 4000
// CHECK: forward aten::linear live 4000
// CHECK-NEXT: forward aten::relu live 8000
// CHECK-NEXT: forward aten::dropout live 12000
module {
  func.func @dropout_mlp(%x: tensor<10x3xf32>) -> tensor<10x100xf32> {
    %w = memopt.param "fc.weight" : tensor<100x3xf32>
    %b = memopt.param "fc.bias" : tensor<100xf32>
    %h = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>]
        : (tensor<10x3xf32>, tensor<100x3xf32>, tensor<100xf32>) -> tensor<10x100xf32>
    %a = memopt.op "aten::relu"(%h) [#memopt.arg<0>] : (tensor<10x100xf32>) -> tensor<10x100xf32>
    %d = memopt.op "aten::dropout"(%a) [#memopt.arg<0>, 1.000000e-01, true] {nondeterministic}
        : (tensor<10x100xf32>) -> tensor<10x100xf32>
    return %d : tensor<10x100xf32>
  }
}

// -----

// CUDA: linear + h 4096; relu + a 4096 (h dies after it); dropout + d 4096
//       + mask 1024.
// CHECK-LABEL: memory-model @dropout_mlp
// CHECK-DAG: saved aten::dropout 1024
// CHECK-DAG: saved aten::relu 4096
// CHECK: forward aten::linear live 4096
// CHECK-NEXT: forward aten::relu live 8192
// CHECK-NEXT: forward aten::dropout live 9216
module attributes {memopt.device = "cuda"} {
  func.func @dropout_mlp(%x: tensor<10x3xf32>) -> tensor<10x100xf32> {
    %w = memopt.param "fc.weight" : tensor<100x3xf32>
    %b = memopt.param "fc.bias" : tensor<100xf32>
    %h = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>]
        : (tensor<10x3xf32>, tensor<100x3xf32>, tensor<100xf32>) -> tensor<10x100xf32>
    %a = memopt.op "aten::relu"(%h) [#memopt.arg<0>] : (tensor<10x100xf32>) -> tensor<10x100xf32>
    %d = memopt.op "aten::dropout"(%a) [#memopt.arg<0>, 1.000000e-01, true] {nondeterministic}
        : (tensor<10x100xf32>) -> tensor<10x100xf32>
    return %d : tensor<10x100xf32>
  }
}

// -----

// A function's own stamp wins over its module's (scratch copies made while
// planning carry their original's): 40 bytes of noise on the CPU, no block
// rounding (mul 40, then dropout + 40 + 40).
// CHECK-LABEL: memory-model @stamped_function
// CHECK-DAG: saved aten::dropout 40
// CHECK: forward aten::mul live 40
// CHECK-NEXT: forward aten::dropout live 120
module attributes {memopt.device = "cuda"} {
  func.func @stamped_function(%x: tensor<10xf32>) -> tensor<10xf32>
      attributes {memopt.device = "cpu"} {
    %w = memopt.param "w" : tensor<10xf32>
    %a = memopt.op "aten::mul"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
    %d = memopt.op "aten::dropout"(%a) [#memopt.arg<0>, 1.000000e-01, true] {nondeterministic}
        : (tensor<10xf32>) -> tensor<10xf32>
    return %d : tensor<10xf32>
  }
}
