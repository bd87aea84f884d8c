"""memopt::compress / decompress / is_binary / packed_numel from Python and
TorchScript. Payloads are compared with numpy references built from the
documented formats (docs/runtime-compression.md), never with the runtime."""
import numpy as np
import pytest
import torch

KINDS = ["bit", "bool", "uint8", "sparse"]
# The CUDA kernels run the same cases (scripts/gpu-check.sh runs `-k cuda`).
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
PAYLOAD_DTYPE = {"bit": torch.uint8, "bool": torch.bool, "uint8": torch.uint8,
                 "sparse": torch.int32}
BITS_VIEW = {torch.float32: torch.int32, torch.float16: torch.int16,
             torch.bfloat16: torch.int16}

# Each case builds a tensor from a factory f(shape) -> contiguous tensor.
SHAPES = {
    "rows": lambda f: f((8, 64)),
    "odd": lambda f: f((3, 5, 7)),
    "large": lambda f: f((300007,)),
    # Whole 16-byte vectors of every dtype, then a tail of one word and a
    # byte (the CUDA kernels' vector path and their scalar rest).
    "vectors_and_tail": lambda f: f((4096 * 5 + 32 + 3,)),
    # A storage offset of one element: no 16-byte alignment to rely on.
    "misaligned": lambda f: f((4097,))[1:],
    "transposed": lambda f: f((33, 64)).t(),
    "strided": lambda f: f((40, 30))[:, 1::4],
    "expanded": lambda f: f((1, 13)).expand(6, 13),
    "empty": lambda f: f((0, 5)),
    "scalar": lambda f: f(()),
    "channels_last": lambda f: f((2, 3, 5, 7)).contiguous(
        memory_format=torch.channels_last),
}


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def make(kind, dtype, case, device="cpu"):
    """The case's tensor; its view (strides, offset) is made on `device`
    from the same values on every device."""
    gen = torch.Generator().manual_seed(sorted(SHAPES).index(case))
    high = 256 if kind == "uint8" else 2
    return SHAPES[case](lambda shape: torch.randint(
        0, high, shape, generator=gen).to(dtype).to(device))


def reference_payload(x, kind):
    v = x.float().contiguous().reshape(-1).numpy()
    if kind == "bit":
        return np.packbits(v != 0, bitorder="little")
    if kind == "bool":
        return v != 0
    if kind == "uint8":
        return np.where(np.isnan(v), 0, np.clip(v, 0, 255)).astype(np.uint8)
    return np.flatnonzero(v).astype(np.int32)


def bitwise_equal(a, b):
    return (a.shape == b.shape and a.dtype == b.dtype and torch.equal(
        a.contiguous().view(BITS_VIEW[a.dtype]),
        b.contiguous().view(BITS_VIEW[b.dtype])))


@pytest.mark.parametrize("case", sorted(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("device", DEVICES)
def test_round_trip_matches_numpy_reference(runtime, kind, dtype, case,
                                            device):
    x = make(kind, dtype, case, device)
    packed = runtime.compress(x, kind, True)
    assert packed.dtype == PAYLOAD_DTYPE[kind]
    assert packed.device == x.device
    np.testing.assert_array_equal(packed.cpu().numpy(),
                                  reference_payload(x.cpu(), kind))
    assert torch.equal(runtime.compress(x, kind), packed)
    y = runtime.decompress(packed, kind, list(x.shape), x.dtype)
    assert y.is_contiguous() and y.device == x.device
    assert bitwise_equal(y, x)


def test_bit_payload_is_one_thirty_second_of_float32(runtime):
    x = torch.randint(0, 2, (32, 256)).float()
    packed = runtime.compress(x, "bit", True)
    assert packed.numel() * packed.element_size() * 32 == \
        x.numel() * x.element_size()
    assert runtime.packed_numel("bit", [32, 256]) == packed.numel()
    assert runtime.packed_numel("bit", [3, 3]) == 2
    assert runtime.packed_numel("uint8", [3, 3]) == 9


def test_bit_order_is_little(runtime):
    x = torch.tensor([1., 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1])
    assert runtime.compress(x, "bit").tolist() == [0x01, 0x86, 0x01]


@pytest.mark.parametrize("kind,values,dtype,message", [
    ("bit", [0., 1, 0.5], torch.float32,
     "memopt: compress(bit): value 0.5 at flat index 2 of a float32 tensor "
     "of shape [3] is not 0 or 1"),
    ("sparse", [1., -1], torch.bfloat16,
     "memopt: compress(sparse): value -1 at flat index 1 of a bfloat16 "
     "tensor of shape [2] is not 0 or 1"),
    ("uint8", [7., 256, 3.5], torch.float16,
     "memopt: compress(uint8): value 256 at flat index 1 of a float16 tensor "
     "of shape [3] is not an integer in [0, 255]"),
])
@pytest.mark.parametrize("device", DEVICES)
def test_check_reports_first_invalid_value(runtime, kind, values, dtype,
                                           message, device):
    x = torch.tensor(values, dtype=dtype, device=device)
    with pytest.raises(RuntimeError) as err:
        runtime.compress(x, kind, True)
    assert str(err.value).splitlines()[0] == message


def test_check_index_is_logical_for_views(runtime):
    x = torch.zeros(4, 6)
    x[0, 5] = 3.0  # flat 5 in memory, flat 5 * 4 = 20 in x.t()
    x[2, 1] = 0.25  # flat 13 in memory, flat 1 * 4 + 2 = 6 in x.t()
    with pytest.raises(RuntimeError) as err:
        runtime.compress(x.t(), "bit", True)
    assert str(err.value).splitlines()[0] == (
        "memopt: compress(bit): value 0.25 at flat index 6 of a float32 "
        "tensor of shape [6, 4] is not 0 or 1")


def test_unchecked_values(runtime):
    x = torch.tensor([0.5, -3, float("nan"), -0.0, 0, 1, float("inf")])
    y = runtime.decompress(runtime.compress(x, "bit"), "bit", [7],
                           torch.float32)
    assert y.tolist() == [1, 1, 1, 0, 0, 1, 1]
    x = torch.tensor([3.7, -2, 300, float("nan"), 254.9])
    y = runtime.decompress(runtime.compress(x, "uint8"), "uint8", [5],
                           torch.float32)
    assert y.tolist() == [3, 0, 255, 0, 254]


def test_is_binary(runtime):
    assert runtime.is_binary(torch.tensor([0., 1, -0.0]))
    assert not runtime.is_binary(torch.tensor([0., 1, 2]))
    assert runtime.is_binary(torch.empty(0, dtype=torch.float16))


def test_requires_grad_input(runtime):
    x = torch.randint(0, 2, (4, 4)).float().requires_grad_()
    packed = runtime.compress(x, "bit", True)
    y = runtime.decompress(packed, "bit", [4, 4], torch.float32)
    assert not y.requires_grad
    assert torch.equal(y, x.detach())


def test_errors(runtime):
    with pytest.raises(RuntimeError, match="unknown compression kind 'bits'"):
        runtime.compress(torch.zeros(2), "bits")
    with pytest.raises(RuntimeError, match="got int64"):
        runtime.compress(torch.zeros(2, dtype=torch.int64), "bit")
    with pytest.raises(RuntimeError, match=r"payload holds 1 elements, shape "
                       r"\[3, 3\] needs 2"):
        runtime.decompress(torch.zeros(1, dtype=torch.uint8), "bit", [3, 3],
                           torch.float32)
    with pytest.raises(RuntimeError, match="depends on the number of ones"):
        runtime.packed_numel("sparse", [4])


def test_schemas(runtime):
    assert str(runtime.compress.default._schema) == \
        "memopt::compress(Tensor x, str kind, bool check=False) -> Tensor"
    assert str(runtime.decompress.default._schema) == (
        "memopt::decompress(Tensor packed, str kind, int[] shape, "
        "ScalarType dtype) -> Tensor")
    assert str(runtime.is_binary.default._schema) == \
        "memopt::is_binary(Tensor x) -> bool"


class RoundTrip(torch.nn.Module):
    def forward(self, x: torch.Tensor, kind: str) -> torch.Tensor:
        packed = torch.ops.memopt.compress(x, kind, True)
        return torch.ops.memopt.decompress(packed, kind, x.shape, x.dtype)


def test_torchscript_save_load(runtime, tmp_path):
    scripted = torch.jit.script(RoundTrip())
    assert "memopt::compress" in str(scripted.graph)
    path = tmp_path / "roundtrip.pt"
    torch.jit.save(scripted, str(path))
    loaded = torch.jit.load(str(path))
    x = torch.randint(0, 2, (5, 9)).to(torch.bfloat16)
    for kind in KINDS:
        assert bitwise_equal(loaded(x, kind), x)
