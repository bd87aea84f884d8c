//===- CompressionLaunchers.h - CUDA compression kernels, C ABI -*- C++ -*-===//
//
// Plain C entry points for the CUDA compression kernels. The runtime calls
// them for CUDA tensors and the generated CUDA stubs call them directly, so
// this header needs neither CUDA nor LibTorch headers.
//
// Conventions shared by every launcher:
//  - `n` is the number of logical elements, `stream` a cudaStream_t (null is
//    the legacy default stream); work is only enqueued, never synchronized.
//  - Values are passed as raw bit patterns: f32 as float, f16 and bf16 as
//    uint16_t, so that callers need no half-precision types.
//  - The return value is a cudaError_t (0 == cudaSuccess) from the launch.
//  - Formats match the CPU runtime exactly (see docs/runtime-compression.md):
//    bit: element i is bit (i % 8) of byte i / 8, padding bits are zero;
//    bool / uint8: one byte per element; sparse: ascending int32 or int64
//    flat indices of the non-zero elements.
//  - Without a check, a non-zero value encodes as 1 (bit, bool, sparse) and
//    uint8 encoding truncates toward zero after clamping to [0, 255], NaN -> 0.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_COMPRESSIONLAUNCHERS_H
#define MEMOPT_RUNTIME_COMPRESSIONLAUNCHERS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// bit: `out` holds (n + 7) / 8 bytes.
int memopt_launch_bit_pack_f32(const float *in, uint8_t *out, int64_t n,
                               void *stream);
int memopt_launch_bit_pack_f16(const uint16_t *in, uint8_t *out, int64_t n,
                               void *stream);
int memopt_launch_bit_pack_bf16(const uint16_t *in, uint8_t *out, int64_t n,
                                void *stream);
int memopt_launch_bit_unpack_f32(const uint8_t *in, float *out, int64_t n,
                                 void *stream);
int memopt_launch_bit_unpack_f16(const uint8_t *in, uint16_t *out, int64_t n,
                                 void *stream);
int memopt_launch_bit_unpack_bf16(const uint8_t *in, uint16_t *out, int64_t n,
                                  void *stream);

// bool: `out` / `in` hold n bytes, each 0 or 1 (torch.bool storage).
int memopt_launch_bool_pack_f32(const float *in, uint8_t *out, int64_t n,
                                void *stream);
int memopt_launch_bool_pack_f16(const uint16_t *in, uint8_t *out, int64_t n,
                                void *stream);
int memopt_launch_bool_pack_bf16(const uint16_t *in, uint8_t *out, int64_t n,
                                 void *stream);
int memopt_launch_bool_unpack_f32(const uint8_t *in, float *out, int64_t n,
                                  void *stream);
int memopt_launch_bool_unpack_f16(const uint8_t *in, uint16_t *out, int64_t n,
                                  void *stream);
int memopt_launch_bool_unpack_bf16(const uint8_t *in, uint16_t *out, int64_t n,
                                   void *stream);

// uint8: `out` / `in` hold n bytes, the integer values.
int memopt_launch_uint8_pack_f32(const float *in, uint8_t *out, int64_t n,
                                 void *stream);
int memopt_launch_uint8_pack_f16(const uint16_t *in, uint8_t *out, int64_t n,
                                 void *stream);
int memopt_launch_uint8_pack_bf16(const uint16_t *in, uint8_t *out, int64_t n,
                                  void *stream);
int memopt_launch_uint8_unpack_f32(const uint8_t *in, float *out, int64_t n,
                                   void *stream);
int memopt_launch_uint8_unpack_f16(const uint8_t *in, uint16_t *out, int64_t n,
                                   void *stream);
int memopt_launch_uint8_unpack_bf16(const uint8_t *in, uint16_t *out, int64_t n,
                                    void *stream);

// Checks: write to the device scalar `*first` the smallest flat index whose
// value is not 0 or 1 (find_nonbinary) or not an integer in [0, 255]
// (find_non_uint8), or n when every value is representable.
int memopt_launch_find_nonbinary_f32(const float *in, int64_t n, int64_t *first,
                                     void *stream);
int memopt_launch_find_nonbinary_f16(const uint16_t *in, int64_t n,
                                     int64_t *first, void *stream);
int memopt_launch_find_nonbinary_bf16(const uint16_t *in, int64_t n,
                                      int64_t *first, void *stream);
int memopt_launch_find_non_uint8_f32(const float *in, int64_t n, int64_t *first,
                                     void *stream);
int memopt_launch_find_non_uint8_f16(const uint16_t *in, int64_t n,
                                     int64_t *first, void *stream);
int memopt_launch_find_non_uint8_bf16(const uint16_t *in, int64_t n,
                                      int64_t *first, void *stream);

// sparse, in two steps because the payload size is data dependent:
//  1. count: fills `workspace` (memopt_sparse_workspace_elems(n) int64 slots,
//     device memory) and writes the number of non-zeros to device `*count`;
//  2. after the caller read the count and allocated `indices` (count entries
//     of `index_bytes` = 4 or 8 bytes), write them in ascending order.
// Decompress: `out` is zero-filled, then 1 is stored at every index; indices
// outside [0, n) are skipped (the CPU runtime rejects them instead).
int64_t memopt_sparse_workspace_elems(int64_t n);
int memopt_launch_sparse_count_f32(const float *in, int64_t n,
                                   int64_t *workspace, int64_t *count,
                                   void *stream);
int memopt_launch_sparse_count_f16(const uint16_t *in, int64_t n,
                                   int64_t *workspace, int64_t *count,
                                   void *stream);
int memopt_launch_sparse_count_bf16(const uint16_t *in, int64_t n,
                                    int64_t *workspace, int64_t *count,
                                    void *stream);
int memopt_launch_sparse_write_f32(const float *in, int64_t n,
                                   const int64_t *workspace, void *indices,
                                   int index_bytes, void *stream);
int memopt_launch_sparse_write_f16(const uint16_t *in, int64_t n,
                                   const int64_t *workspace, void *indices,
                                   int index_bytes, void *stream);
int memopt_launch_sparse_write_bf16(const uint16_t *in, int64_t n,
                                    const int64_t *workspace, void *indices,
                                    int index_bytes, void *stream);
int memopt_launch_sparse_scatter_f32(const void *indices, int index_bytes,
                                     int64_t count, float *out, int64_t n,
                                     void *stream);
int memopt_launch_sparse_scatter_f16(const void *indices, int index_bytes,
                                     int64_t count, uint16_t *out, int64_t n,
                                     void *stream);
int memopt_launch_sparse_scatter_bf16(const void *indices, int index_bytes,
                                      int64_t count, uint16_t *out, int64_t n,
                                      void *stream);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // MEMOPT_RUNTIME_COMPRESSIONLAUNCHERS_H
