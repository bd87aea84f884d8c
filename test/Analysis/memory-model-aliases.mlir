// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// Values that reach autograd through lists, tuples and casts, layouts that
// make kernels copy, and who holds gradients. Every function below was
// measured in eager PyTorch 1.13 with the counting allocator (the peaks agree
// to the byte except where noted).

// chunk -> ListUnpack: the parts' gradients are what chunk's backward
// (SplitBackward: one new input gradient) consumes. h = 4x24xf32 = 384,
// parts and products 4x8xf32 = 128. The caller holds the loss gradient
// (out.backward(g)) until backward returns.
//   forward  linear +h 384; chunk: views; mul +128 (saves a, b: h's
//            storage); add +128; p dies                              = 512
//   backward + loss gradient 128; add passes it to p and c            = 640
//            mul: + grad a, grad b                                    = 896
//            chunk: + grad h 384, - grad a, grad b, the loss gradient
//            (c's) still held by the caller                           = 896
//            linear: + grad w 768 (x needs none)                      = 1408
// CHECK-LABEL: memory-model @chunk_parts
// CHECK: saved aten::mul 384
// CHECK: backward aten::add live 640
// CHECK-NEXT: backward aten::mul live 896
// CHECK-NEXT: backward aten::chunk live 896
// CHECK-NEXT: backward aten::linear live 1408
// CHECK: peak 1408 at backward aten::linear
func.func @chunk_parts(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = memopt.param "lin.weight" : tensor<24x8xf32>
  %1 = memopt.get_attr "lin.bias" : !memopt.none
  %2 = memopt.op "aten::linear"(%arg0, %0, %1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] : (tensor<4x8xf32>, tensor<24x8xf32>, !memopt.none) -> tensor<4x24xf32>
  %3 = memopt.op "aten::chunk"(%2) [#memopt.arg<0>, 3, -1] : (tensor<4x24xf32>) -> !memopt.list<tensor<*xf32>>
  %4:3 = memopt.op "prim::ListUnpack"(%3) [#memopt.arg<0>] : (!memopt.list<tensor<*xf32>>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
  %5 = memopt.op "aten::mul"(%4#0, %4#1) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = memopt.op "aten::add"(%5, %4#2) [#memopt.arg<0>, #memopt.arg<1>, 1] {overload = "Tensor"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// A list built by aten::append (an unrolled loop) holds its elements until
// stack; stack's gradient reaches them. The weight is used twice: its first
// gradient (8x8xf32 = 256) waits for the second; autograd adds the two out
// of place, once the second linear's node has freed its incoming gradient
// (a second timeline entry for that linear), then the sum goes into .grad.
//   forward  linear +128, sigmoid +128 (saves its result), twice; stack
//            +256                                                     = 512
//   backward + loss gradient 256                                      = 768
//            stack: views of it; sigmoid +128                         = 896
//            linear: + grad w, held                                   = 1024
//            sigmoid +128 -128; linear + grad w                       = 1152
//            its incoming gradient freed -128, + the sum 256          = 1280
// CHECK-LABEL: memory-model @append_stack
// CHECK: forward aten::stack live 512
// CHECK: backward aten::stack live 768
// CHECK-NEXT: backward aten::sigmoid live 896
// CHECK-NEXT: backward aten::linear live 1024
// CHECK-NEXT: backward aten::sigmoid live 1024
// CHECK-NEXT: backward aten::linear live 1152
// CHECK-NEXT: backward aten::linear live 1280
// CHECK-NOT: unknown
// CHECK: peak 1280
func.func @append_stack(%arg0: tensor<4x8xf32>) -> tensor<2x4x8xf32> {
  %0 = memopt.op "prim::ListConstruct"() [] : () -> !memopt.list<tensor<*xf32>>
  %1 = memopt.param "lin.weight" : tensor<8x8xf32>
  %2 = memopt.get_attr "lin.bias" : !memopt.none
  %3 = memopt.op "aten::linear"(%arg0, %1, %2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] : (tensor<4x8xf32>, tensor<8x8xf32>, !memopt.none) -> tensor<4x8xf32>
  %4 = memopt.op "aten::sigmoid"(%3) [#memopt.arg<0>] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = memopt.op "aten::append"(%0, %4) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, overload = "t", views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<4x8xf32>) -> !memopt.list<tensor<*xf32>>
  %7 = memopt.op "aten::linear"(%arg0, %1, %2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] : (tensor<4x8xf32>, tensor<8x8xf32>, !memopt.none) -> tensor<4x8xf32>
  %8 = memopt.op "aten::sigmoid"(%7) [#memopt.arg<0>] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %9 = memopt.op "aten::append"(%0, %8) [#memopt.arg<0>, #memopt.arg<1>] {mutates = array<i64: 0>, overload = "t", views = array<i64: 0>} : (!memopt.list<tensor<*xf32>>, tensor<4x8xf32>) -> !memopt.list<tensor<*xf32>>
  %10 = memopt.op "aten::stack"(%0) [#memopt.arg<0>, 0] : (!memopt.list<tensor<*xf32>>) -> tensor<2x4x8xf32>
  return %10 : tensor<2x4x8xf32>
}

// cat's backward gives each input a slice of its gradient. f gets two: the
// second is summed out of place (the first shares its storage with the
// whole cat gradient), and the cat gradient can then go.
//   forward  linear +128; sigmoid +128; cat +256; tanh +256          = 640
//   end of forward: f (saved by sigmoid), t (saved, returned)        = 384
//   backward + loss gradient 256; tanh + grad c 256                  = 896
//            cat: f's slices of grad c, summed into a new 128        = 1024
//            sigmoid: grad c gone, + grad of linear's output 128     = 896
//            linear: f and its gradient gone, + grad w 256           = 896
// CHECK-LABEL: memory-model @cat_slices
// CHECK: backward aten::tanh live 896
// CHECK-NEXT: backward aten::cat live 1024
// CHECK-NEXT: backward aten::sigmoid live 896
// CHECK-NEXT: backward aten::linear live 896
func.func @cat_slices(%arg0: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %0 = memopt.param "l.weight" : tensor<8x8xf32>
  %1 = memopt.get_attr "l.bias" : !memopt.none
  %2 = memopt.op "aten::linear"(%arg0, %0, %1) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] : (tensor<4x8xf32>, tensor<8x8xf32>, !memopt.none) -> tensor<4x8xf32>
  %3 = memopt.op "aten::sigmoid"(%2) [#memopt.arg<0>] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = memopt.op "prim::ListConstruct"(%3, %3) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<4x8xf32>, tensor<4x8xf32>) -> !memopt.list<tensor<*xf32>>
  %5 = memopt.op "aten::cat"(%4) [#memopt.arg<0>, 1] : (!memopt.list<tensor<*xf32>>) -> tensor<4x16xf32>
  %6 = memopt.op "aten::tanh"(%5) [#memopt.arg<0>] : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %6 : tensor<4x16xf32>
}

// A tuple element and an Optional cast are the values themselves: the
// gradient of sigmoid's input reaches linear (+ grad w 16x8xf32 = 512).
//   forward  linear +256; sigmoid +256 (saves its result), y dies     = 512
//   backward s 256 + loss gradient 256; sigmoid + grad y 256          = 768
//            linear: y's gradient, + grad w 512                       = 1280
// CHECK-LABEL: memory-model @tuple_index
// CHECK: forward aten::sigmoid live 512
// CHECK: backward aten::sigmoid live 768
// CHECK-NEXT: backward aten::linear live 1280
// CHECK-NOT: unknown
func.func @tuple_index(%arg0: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = memopt.param "lin.weight" : tensor<16x8xf32>
  %nb = memopt.get_attr "lin.bias" : !memopt.none
  %y = memopt.op "aten::linear"(%arg0, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] : (tensor<4x8xf32>, tensor<16x8xf32>, !memopt.none) -> tensor<4x16xf32>
  %t = memopt.op "prim::TupleConstruct"(%y) [#memopt.arg<0>, #memopt.none] : (tensor<4x16xf32>) -> !memopt.script<"(Tensor, NoneType)">
  %u:2 = memopt.op "prim::TupleUnpack"(%t) [#memopt.arg<0>] : (!memopt.script<"(Tensor, NoneType)">) -> (tensor<4x16xf32>, !memopt.script<"Tensor?">)
  %t2 = memopt.op "prim::TupleConstruct"(%u#0, %u#1) [#memopt.arg<0>, #memopt.arg<1>] : (tensor<4x16xf32>, !memopt.script<"Tensor?">) -> !memopt.script<"(Tensor, Tensor?)">
  %e = memopt.op "prim::TupleIndex"(%t2) [#memopt.arg<0>, 0] : (!memopt.script<"(Tensor, Tensor?)">) -> tensor<4x16xf32>
  %c = memopt.op "prim::unchecked_cast"(%e) [#memopt.arg<0>] : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = memopt.op "aten::sigmoid"(%c) [#memopt.arg<0>] : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %s : tensor<4x16xf32>
}

// linear on x.transpose(0, 1) (3-d, leading dims swapped): matmul's folding
// reshape copies the input (2x4x8xf32 = 256) and saves the copy for the
// weight gradient. layer_norm copies its non-contiguous input
// (2x4x16xf32 = 512) while it runs, in forward and in backward.
// (Measured 3136: layer_norm's backward also has a 128-byte buffer.)
//   forward  linear: + copy 256 + y 512                              = 768
//            layer_norm: + result 512 + mean, rstd 2 x 32, + copy 512 = 1856
//   end of forward: copy, y (saved), result, statistics              = 1344
//   backward + loss gradient 512; layer_norm: + grad y 512, grads of
//            weight and bias 2 x 64, + copy of y 512                 = 3008
// CHECK-LABEL: memory-model @fold_copy
// CHECK-DAG: saved aten::linear 256
// CHECK-DAG: saved aten::layer_norm 576
// CHECK: forward aten::linear live 768
// CHECK: forward aten::layer_norm live 1856
// CHECK: backward aten::layer_norm live 3008
// CHECK: end-of-forward 1344
func.func @fold_copy(%arg0: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> {
  %0 = memopt.op "aten::transpose"(%arg0) [#memopt.arg<0>, 0, 1] {overload = "int", views = array<i64: 0>} : (tensor<2x4x8xf32>) -> tensor<4x2x8xf32>
  %1 = memopt.param "lin.weight" : tensor<16x8xf32>
  %2 = memopt.get_attr "lin.bias" : !memopt.none
  %3 = memopt.op "aten::linear"(%0, %1, %2) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] : (tensor<4x2x8xf32>, tensor<16x8xf32>, !memopt.none) -> tensor<4x2x16xf32>
  %4 = memopt.op "aten::transpose"(%3) [#memopt.arg<0>, 0, 1] {overload = "int", views = array<i64: 0>} : (tensor<4x2x16xf32>) -> tensor<2x4x16xf32>
  %5 = memopt.param "ln.weight" : tensor<16xf32>
  %6 = memopt.param "ln.bias" : tensor<16xf32>
  %7 = memopt.op "aten::layer_norm"(%4, %5, %6) [#memopt.arg<0>, [16], #memopt.arg<1>, #memopt.arg<2>, 1.000000e-05, true] : (tensor<2x4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %7 : tensor<2x4x16xf32>
}

// saved_input = #memopt.compress<bit>: autograd keeps the linear layer's
// input packed (8x256 elements / 8 = 256 bytes) instead of 8x256xf32 = 8192,
// and unpacks it into a full buffer while its backward runs.
//   forward  sigmoid +a 8192; linear + y 512 + packed 256, then a dies = 8960
//   end of forward: y, packed                                          = 768
//   backward + loss gradient 512, + unpacked a 8192, + grad w 16384    = 25856
// CHECK-LABEL: memory-model @packed_input
// CHECK: saved aten::linear 256
// CHECK: forward aten::linear live 8960
// CHECK: backward aten::linear live 25856
// CHECK: end-of-forward 768
func.func @packed_input(%x: tensor<8x256xf32>) -> tensor<8x16xf32> {
  %w = memopt.param "fc.weight" : tensor<16x256xf32>
  %nb = memopt.get_attr "fc.bias" : !memopt.none
  %a = memopt.op "aten::sigmoid"(%x) [#memopt.arg<0>] : (tensor<8x256xf32>) -> tensor<8x256xf32>
  %y = memopt.op "aten::linear"(%a, %w, %nb) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {saved_input = #memopt.compress<bit>}
      : (tensor<8x256xf32>, tensor<16x256xf32>, !memopt.none) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
