// RUN: memopt-opt %s -memopt-test-memory-model -o /dev/null | FileCheck %s

// A checkpoint region saves only its input h (4x256xf32 = 4096 bytes); relu
// and sigmoid inside run in forward as eager runs them, saving, until the
// region's end drops their graph, and are recomputed, with saving, in
// backward.
//   forward   linear   + h                                      = 4096
//             relu     + r                                      = 8192
//             sigmoid  + s (r saved by relu until the end)     = 12288 -> 8192
//   end of forward: h (kept by the region) + s (returned)       = 8192
//   backward: + loss gradient of s                              = 12288
//   recompute relu     + r' (saved)                             = 16384
//             sigmoid  + s' (saved by sigmoid only: the runtime
//                        drops the recomputed output itself)    = 20480
//   backward  sigmoid  + grad r', then s' released              = 24576
//             relu     + grad h, then r' released               = 24576
//   region:   inner grads and saves released                    = 16384
//   region done: h freed; grad h and the loss gradient
//                (the caller holds it until backward returns)   = 12288
//   linear: + grad w (256x16xf32 = 16384), x needs no grad      = 28672 (peak)
// CHECK-LABEL: memory-model @keep
// CHECK: saved checkpoint "blk" 4096
// CHECK: forward aten::linear live 4096
// CHECK-NEXT: forward aten::relu live 8192
// CHECK-NEXT: forward aten::sigmoid live 12288
// CHECK-NEXT: forward checkpoint "blk" live 8192
// CHECK-NEXT: recompute aten::relu live 16384
// CHECK-NEXT: recompute aten::sigmoid live 20480
// CHECK-NEXT: backward aten::sigmoid live 24576
// CHECK-NEXT: backward aten::relu live 24576
// CHECK-NEXT: backward checkpoint "blk" live 16384
// CHECK-NEXT: backward aten::linear live 28672
// CHECK: end-of-forward 8192
// CHECK: peak 28672 at backward aten::linear
func.func @keep(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %c = memopt.checkpoint "blk" (%h) policies [#memopt.keep]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%a: tensor<4x256xf32>):
    %r = memopt.op "aten::relu"(%a) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    %s = memopt.op "aten::sigmoid"(%r) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %s : tensor<4x256xf32>
  }
  return %c : tensor<4x256xf32>
}

// Compressed to bits, the saved input takes 1024 / 8 = 128 bytes and h dies
// after the region; backward decompresses it into a new 4096-byte buffer
// held until the region's backward returns: the region's backward runs 128
// bytes above keep's, the peak (the linear's backward) is keep's. Offloaded,
// it takes no device bytes until prefetched.
// CHECK-LABEL: memory-model @compress
// CHECK: saved checkpoint "blk" 128
// CHECK: forward checkpoint "blk" live 8320
// CHECK: backward aten::relu live 24704
// CHECK: end-of-forward 4224
// CHECK: peak 28672
// CHECK-LABEL: memory-model @offload
// CHECK-NOT: saved checkpoint
// CHECK: forward checkpoint "blk" live 8192
// CHECK: end-of-forward 4096
// CHECK: peak 28672
func.func @compress(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %c = memopt.checkpoint "blk" (%h) policies [#memopt.compress<bit>]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%a: tensor<4x256xf32>):
    %r = memopt.op "aten::relu"(%a) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    %s = memopt.op "aten::sigmoid"(%r) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %s : tensor<4x256xf32>
  }
  return %c : tensor<4x256xf32>
}
func.func @offload(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %c = memopt.checkpoint "blk" (%h) policies [#memopt.offload<host>]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%a: tensor<4x256xf32>):
    %r = memopt.op "aten::relu"(%a) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    %s = memopt.op "aten::sigmoid"(%r) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %s : tensor<4x256xf32>
  }
  return %c : tensor<4x256xf32>
}

// A region whose input is a transposed view (what nn.MultiheadAttention
// with batch_first=True passes on, `query.transpose(1, 0)`): the body's
// linear folds it with a reshape that copies it (8x4x32xf32 = 4096 bytes),
// in the region's recompute as in the unplanned forward, and its weight
// gradient keeps the copy. Recompute: the kept h (4096), the region's
// result and its gradient (8192 each), the copy and the new result:
// 32768. Before, the body's arguments lost the layout of the region's
// inputs (28672 here): a 2-layer nn.TransformerEncoder's plan was
// predicted 6 KiB under its measured peak.
// CHECK-LABEL: memory-model @strided_input
// CHECK: recompute aten::linear live 32768
func.func @strided_input(%x: tensor<4x8x32xf32>) -> tensor<8x4x64xf32> {
  %w0 = memopt.param "pre.weight" : tensor<32x32xf32>
  %h = memopt.op "aten::linear"(%x, %w0) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x8x32xf32>, tensor<32x32xf32>) -> tensor<4x8x32xf32>
  %t = memopt.op "aten::transpose"(%h) [#memopt.arg<0>, 1, 0] {overload = "int", views = array<i64: 0>}
      : (tensor<4x8x32xf32>) -> tensor<8x4x32xf32>
  %c = memopt.checkpoint "proj" (%t) policies [#memopt.keep]
      : (tensor<8x4x32xf32>) -> tensor<8x4x64xf32> {
  ^bb0(%a: tensor<8x4x32xf32>):
    %w = memopt.param "proj.weight" : tensor<64x32xf32>
    %y = memopt.op "aten::linear"(%a, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
        : (tensor<8x4x32xf32>, tensor<64x32xf32>) -> tensor<8x4x64xf32>
    memopt.yield %y : tensor<8x4x64xf32>
  }
  return %c : tensor<8x4x64xf32>
}

// What the body's ops save stays until the region's end, as the runtime's
// forward records a graph there (eager's requires_grad flags) and drops it
// at the end: r, saved by relu, is live beside s and t at the tanh
// (h + r + s + t = 16384), where without a graph it would have died at the
// sigmoid (12288). At the region's end only h and t stay.
// CHECK-LABEL: memory-model @held_until_end
// CHECK: forward aten::relu live 8192
// CHECK-NEXT: forward aten::sigmoid live 12288
// CHECK-NEXT: forward aten::tanh live 16384
// CHECK-NEXT: forward checkpoint "blk" live 8192
func.func @held_until_end(%x: tensor<4x16xf32>) -> tensor<4x256xf32> {
  %w = memopt.param "fc.weight" : tensor<256x16xf32>
  %h = memopt.op "aten::linear"(%x, %w) [#memopt.arg<0>, #memopt.arg<1>, #memopt.none]
      : (tensor<4x16xf32>, tensor<256x16xf32>) -> tensor<4x256xf32>
  %c = memopt.checkpoint "blk" (%h) policies [#memopt.keep]
      : (tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%a: tensor<4x256xf32>):
    %r = memopt.op "aten::relu"(%a) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    %s = memopt.op "aten::sigmoid"(%r) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    %t = memopt.op "aten::tanh"(%s) [#memopt.arg<0>] : (tensor<4x256xf32>) -> tensor<4x256xf32>
    memopt.yield %t : tensor<4x256xf32>
  }
  return %c : tensor<4x256xf32>
}
