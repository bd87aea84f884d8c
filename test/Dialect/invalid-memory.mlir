// RUN: memopt-opt %s -split-input-file -verify-diagnostics
// Every verifier rule of the compression and offload ops and their types.

func.func @compress_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'memopt.compress' op input must have a static shape, got 'tensor<?xf32>'}}
  %p = memopt.compress %x : tensor<?xf32> -> !memopt.packed<4xf32, bit>
  return
}

// -----

func.func @compress_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.compress' op packed type '!memopt.packed<8xf32, bit>' does not match input type 'tensor<4xf32>'}}
  %p = memopt.compress %x : tensor<4xf32> -> !memopt.packed<8xf32, bit>
  return
}

// -----

func.func @compress_integer(%x: tensor<4xi32>) {
  // expected-error @+1 {{'memopt.compress' op operand #0 must be float16/bfloat16/float32 tensor of 16-bit float or bfloat16 type or 32-bit float values, but got 'tensor<4xi32>'}}
  %p = "memopt.compress"(%x) : (tensor<4xi32>) -> !memopt.packed<4xf32, bit>
  return
}

// -----

func.func @decompress_mismatch(%p: !memopt.packed<4xf32, bit>) {
  // expected-error @+1 {{'memopt.decompress' op result type 'tensor<4xf16>' does not match packed type '!memopt.packed<4xf32, bit>'}}
  %x = memopt.decompress %p : !memopt.packed<4xf32, bit> -> tensor<4xf16>
  return
}

// -----

// expected-error @+1 {{packed tensor element type must be f16, bf16 or f32, got 'i8'}}
func.func private @packed_element(!memopt.packed<4xi8, bit>)

// -----

// expected-error @+1 {{expected static shape}}
func.func private @packed_dynamic(!memopt.packed<?xf32, bit>)

// -----

// expected-error @+1 {{host payload must be a ranked tensor or a packed tensor, got 'i64'}}
func.func private @host_payload(!memopt.host<i64>)

// -----

func.func @offload_mismatch(%x: tensor<4xf32>) {
  // expected-error @+1 {{'memopt.offload' op host type '!memopt.host<tensor<8xf32>>' does not hold input type 'tensor<4xf32>'}}
  %h, %t = memopt.offload host %x : tensor<4xf32> -> !memopt.host<tensor<8xf32>>
  return
}

// -----

func.func @offload_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'memopt.offload' op input must have a static shape, got 'tensor<?xf32>'}}
  %h, %t = "memopt.offload"(%x) {kind = 0 : i32} : (tensor<?xf32>) -> (!memopt.host<tensor<?xf32>>, !memopt.token)
  return
}

// -----

func.func @wait_on_offload(%x: tensor<4xf32>) {
  %h, %t = memopt.offload host %x : tensor<4xf32> -> !memopt.host<tensor<4xf32>>
  // expected-error @+1 {{'memopt.wait' op waits on a token of 'memopt.offload', expected one of 'memopt.prefetch'}}
  %y = memopt.wait %t, %h : !memopt.host<tensor<4xf32>>
  return
}

// -----

func.func @wait_type(%x: tensor<4xf32>) {
  %h, %t = memopt.offload host %x : tensor<4xf32> -> !memopt.host<tensor<4xf32>>
  %r = memopt.prefetch %h after %t : !memopt.host<tensor<4xf32>>
  // expected-error @+1 {{'memopt.wait' op failed to verify that result is the host tensor's payload}}
  %y = "memopt.wait"(%r, %h) : (!memopt.token, !memopt.host<tensor<4xf32>>) -> tensor<8xf32>
  return
}
