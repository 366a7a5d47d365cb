"""On the stand-in GPU, tensors answer the device they were made for, as on a GPU (issue #27 item 4).

The script's "cuda" tensors are CPU tensors that answer cuda:0; a tensor the script made on the CPU
(no device=, .cpu(), a numpy round trip, a DataLoader batch) answers cpu; moving it .to("cuda") /
.cuda() / Module.to("cuda") makes a cuda one; ops follow torch's device rules (mixing a cuda and a
non-scalar CPU tensor raises; a 0-dim CPU tensor mixes in); numpy of a cuda tensor raises.

CASES is the table: each snippet sets `out`, and EXPECTED is what torch answers on a real GPU
(written from torch's documented behaviour; tests/gpu/test_standin_devices_gpu.py runs the same
snippets on the H200 and compares). An exception is answered as (its type, its message up to the
first comma): torch's wording after that names the op and differs between ops.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from irscope.kernel.targets import parse_target
from irscope.standin import gpu as standin

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

MIX = ("RuntimeError", "Expected all tensors to be on the same device")
NUMPY = (
    "TypeError",
    "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
)

# name -> (snippet setting `out`, what a GPU answers)
CASES: dict[str, tuple[str, Any]] = {
    # made on the CPU: answers cpu
    "randn_no_device": ("out = torch.randn(4).device", "cpu"),
    "cpu_is_cuda_is_cpu": ("t = torch.randn(4); out = (t.is_cuda, t.is_cpu, t.get_device())", (False, True, -1)),
    "cpu_type": ("out = torch.randn(4).type()", "torch.FloatTensor"),
    "cpu_repr": ("out = 'device=' in repr(torch.randn(2)) or 'device=' in f'{torch.randn(2)}'", False),
    "tensor_from_list": ("out = torch.tensor([1, 2]).device", "cpu"),
    "cpu_of_cuda": ("out = torch.randn(4, device='cuda').cpu().device", "cpu"),
    "to_cpu_of_cuda": ("out = torch.randn(4, device='cuda').to('cpu').is_cuda", False),
    "numpy_round_trip": ("out = torch.from_numpy(torch.randn(3, device='cuda').cpu().numpy()).device", "cpu"),
    "as_tensor_of_numpy": ("import numpy as np; out = torch.as_tensor(np.zeros(3)).device", "cpu"),
    "dataloader_batch": (
        "ds = torch.utils.data.TensorDataset(torch.randn(8, 2), torch.arange(8))\n"
        "x, y = next(iter(torch.utils.data.DataLoader(ds, batch_size=4)))\n"
        "out = (x.device, y.device)",
        ("cpu", "cpu"),
    ),
    "module_made_on_cpu": ("out = torch.nn.Linear(2, 2).weight.device", "cpu"),
    "cpu_model_grad": (
        "m = torch.nn.Linear(2, 2); m(torch.randn(3, 2)).sum().backward()\nout = m.weight.grad.device",
        "cpu",
    ),
    "pin_memory": ("out = torch.randn(3).pin_memory().device", "cpu"),
    # torch.accelerator (Dynamo asks it for the current stream; scripts pick their device with it)
    "accelerator_answers_cuda": (
        "a = torch.accelerator\nout = (a.is_available(), a.current_accelerator(), a.device_count(), "
        "a.current_device_index())",
        (True, "cuda", 1, 0),
    ),
    "accelerator_device_makes_cuda": (
        "out = torch.randn(2, device=torch.accelerator.current_accelerator()).device",
        "cuda:0",
    ),
    # a fake tensor (Helion's and Inductor's tracing) made for cuda is a fake cuda tensor, as on a GPU
    "fake_cuda_stays_cuda": (
        "from torch._subclasses.fake_tensor import FakeTensorMode\n"
        "with FakeTensorMode():\n    t = torch.empty(2, 3, device='cuda')\n    u = torch.zeros_like(t) + 1\n"
        "out = (type(t).__name__, t.fake_device, u.fake_device)",  # its own device, not an answer
        ("FakeTensor", "cuda:0", "cuda:0"),
    ),
    "meta_keeps_meta": (
        "out = (torch.empty(2, device='meta').device, torch.randn(2, device='cuda').to('meta').device)",
        ("meta", "meta"),
    ),
    # made for cuda: answers cuda:0
    "device_cuda": (
        "t = torch.randn(4, device='cuda'); out = (t.device, t.is_cuda, t.is_cpu, t.get_device())",
        ("cuda:0", True, False, 0),
    ),
    "device_index": ("out = torch.zeros(2, device=0).device", "cuda:0"),
    "cuda_type": ("out = torch.randn(4, device='cuda').type()", "torch.cuda.FloatTensor"),
    "cuda_repr": (
        "t = torch.randn(2, device='cuda'); out = \"device='cuda:0'\" in repr(t) and \"device='cuda:0'\" in f'{t}'",
        True,
    ),
    "dot_cuda": ("out = torch.randn(4).cuda().device", "cuda:0"),
    "to_cuda": (
        "t = torch.randn(4); out = (t.to('cuda').device, t.to(torch.device('cuda')).device, t.to(0).device, "
        "t.to('cuda', torch.float16).dtype, t.device)",
        ("cuda:0", "cuda:0", "cuda:0", "torch.float16", "cpu"),
    ),
    "to_other": (
        "a, b = torch.randn(2), torch.randn(2, device='cuda'); out = (a.to(b).device, b.to(a).device)",
        ("cuda:0", "cpu"),
    ),
    "cuda_is_a_copy": ("a = torch.zeros(3); b = a.cuda(); b += 1; out = (a.sum().item(), b.sum().item())", (0.0, 3.0)),
    "cpu_is_a_copy": ("a = torch.zeros(3, device='cuda'); b = a.cpu(); b += 1; out = a.sum().item()", 0.0),
    "already_there_is_itself": (
        "a, b = torch.randn(2), torch.randn(2, device='cuda')\n"
        "out = (a.cpu() is a, a.to('cpu') is a, b.cuda() is b, b.to('cuda') is b)",
        (True, True, True, True),
    ),
    "as_tensor_to_cuda_copies": (
        "a = torch.zeros(2); b = torch.as_tensor(a, device='cuda'); b += 1\nout = (b.device, a.sum().item())",
        ("cuda:0", 0.0),
    ),
    "module_to_cuda": (
        "m = torch.nn.BatchNorm1d(3).to('cuda')\nout = (m.weight.device, m.running_mean.device, m.weight.is_leaf)",
        ("cuda:0", "cuda:0", True),
    ),
    "module_cuda": ("m = torch.nn.Linear(2, 2).cuda(); out = (m.weight.device, m.bias.device)", ("cuda:0", "cuda:0")),
    # Module.to(dtype) calls t.to(None, dtype, non_blocking): the leading None is the device (liger's
    # tests: `.to(device).to(dtype)`, issue #42 item 4)
    "module_to_cuda_then_dtype": (
        "m = torch.nn.Linear(2, 2).to('cuda').to(torch.float16)\n"
        "out = (m.weight.device, m.weight.dtype, torch.randn(2, device='cuda').to(None, torch.float64, False).dtype)",
        ("cuda:0", "torch.float16", "torch.float64"),
    ),
    # a generator for cuda (a JVP flash attention's test seeds its inputs with one, issue #42 item 4)
    "generator_cuda": (
        "g = torch.Generator(device='cuda').manual_seed(1); a = torch.rand(3, device='cuda', generator=g)\n"
        "b = torch.rand(3, device='cuda', generator=torch.Generator(device='cuda').manual_seed(1))\n"
        "out = (g.device, isinstance(g, torch.Generator), a.device, torch.equal(a, b))",
        ("cuda", True, "cuda:0", True),  # the generator's device as given (the H200 says `cuda`, not cuda:0)
    ),
    "generator_cuda_index": (
        "g = torch.Generator(device='cuda:0').manual_seed(1); h = torch.Generator(device=torch.device('cuda'))\n"
        "out = (g.device, h.device, torch.rand(2, device='cuda', generator=g).device)",
        ("cuda:0", "cuda", "cuda:0"),
    ),
    # the allocator's figures, counted from the cuda storages, each rounded up to a 512-byte block (a JVP
    # flash attention's test divides by its peak, issue #42 item 4)
    "memory_allocated": (
        "torch.cuda.reset_peak_memory_stats(); m0 = torch.cuda.memory_allocated()\n"
        "a = torch.empty(1000, device='cuda'); m1 = torch.cuda.memory_allocated()\n"
        "b = torch.empty(10, device='cuda'); c = a[:10]; m2 = torch.cuda.memory_allocated()\n"
        "d = torch.empty(10); m3 = torch.cuda.memory_allocated()\n"
        "del a, c; m4 = torch.cuda.memory_allocated(); p = torch.cuda.max_memory_allocated()\n"
        "out = (m1 - m0, m2 - m1, m3 - m2, m4 - m0, p - m0)",
        (4096, 512, 0, 512, 4608),
    ),
    "module_dtype_keeps_ints": (
        "m = torch.nn.Embedding(4, 2).to('cuda'); m.register_buffer('ids', torch.arange(3, device='cuda'))\n"
        "m = m.to(torch.bfloat16); out = (m.weight.dtype, m.ids.dtype, m.ids.device)",
        ("torch.bfloat16", "torch.int64", "cuda:0"),
    ),
    "module_made_on_cuda": ("out = torch.nn.Linear(2, 2, device='cuda').weight.device", "cuda:0"),
    "default_device": (
        "torch.set_default_device('cuda')\n"
        "try:\n    out = (torch.zeros(2).device, torch.nn.Linear(2, 2).weight.device)\n"
        "finally:\n    torch.set_default_device(None)",
        ("cuda:0", "cuda:0"),
    ),
    "device_context": (
        "with torch.device('cuda'):\n    t = torch.ones(2)\nout = (t.device, torch.ones(2).device)",
        ("cuda:0", "cpu"),
    ),
    # op results
    "op_over_cuda": (
        "a = torch.randn(4, device='cuda')\n"
        "out = [str(x.device) for x in (a + a, a * 2, a.sum(), a[1:], a.view(2, 2), a @ a, torch.cat([a, a]),"
        " torch.empty_like(a), a.new_zeros(3), a.max(0).values, torch.where(a > 0, a, 0.0))]",
        ["cuda:0"] * 11,
    ),
    "op_over_cpu": (
        "a = torch.randn(4); out = sorted({str(x.device) for x in (a + a, a.sum(), torch.stack([a, a]))})",
        ["cpu"],
    ),
    "cpu_scalar_mixes_in": ("out = (torch.randn(4, device='cuda') + torch.tensor(2.0)).device", "cuda:0"),
    "cuda_indexed_by_cpu_index": ("out = torch.randn(4, device='cuda')[torch.tensor([0, 2])].device", "cuda:0"),
    "slice_assigned_from_cpu": ("a = torch.zeros(4, device='cuda'); a[1:3] = torch.ones(2); out = a.sum().item()", 2.0),
    "copy_from_cpu": (
        "a = torch.zeros(2, device='cuda'); a.copy_(torch.ones(2)); out = (a.device, a.sum().item())",
        ("cuda:0", 2.0),
    ),
    "cuda_model_grads": (
        "m = torch.nn.Linear(2, 2).cuda(); m(torch.randn(3, 2, device='cuda')).sum().backward()\n"
        "out = (m.weight.grad.device, m.bias.grad.device)",
        ("cuda:0", "cuda:0"),
    ),
    "adam_step_on_cuda": (
        "m = torch.nn.Linear(2, 2).cuda(); opt = torch.optim.Adam(m.parameters())\n"
        "m(torch.randn(3, 2, device='cuda')).sum().backward(); opt.step()\n"
        "torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"
        "out = (m.weight.device, opt.state[m.weight]['exp_avg'].device)",
        ("cuda:0", "cuda:0"),
    ),
    "tensor_of_cuda": ("out = torch.tensor(torch.randn(2, device='cuda')).device", "cuda:0"),
    "assert_close_across_devices": (
        "t = torch.randn(2, device='cuda')\n"
        "try:\n    torch.testing.assert_close(t, t.cpu()); out = 'passed'\n"
        "except AssertionError as e:\n    out = str(e).splitlines()[0]",
        "The values for attribute 'device' do not match: cuda:0 != cpu.",
    ),
    # what a GPU refuses
    "mix_raises": ("out = torch.randn(4, device='cuda') + torch.randn(4)", MIX),
    "mix_cpu_first_raises": ("out = torch.randn(4) * torch.randn(4, device='cuda')", MIX),
    "mix_one_element_raises": ("out = torch.randn(4, device='cuda') + torch.randn(1)", MIX),
    "cat_mix_raises": ("out = torch.cat([torch.randn(2, device='cuda'), torch.randn(2)])", MIX),
    "linear_on_cpu_input_raises": ("out = torch.nn.Linear(2, 2).cuda()(torch.randn(3, 2))", MIX),
    # unsure (the lead checks on the H200): a 0-dim cuda tensor into a CPU op refused as a mix
    "cuda_scalar_into_cpu_raises": ("out = torch.randn(4) + torch.tensor(2.0, device='cuda')", MIX),
    "numpy_of_cuda_raises": ("out = torch.randn(3, device='cuda').numpy()", NUMPY),
    "asarray_of_cuda_raises": ("import numpy as np; out = np.asarray(torch.randn(3, device='cuda'))", NUMPY),
    "numpy_force_of_cuda": ("out = torch.randn(3, device='cuda').numpy(force=True).shape", (3,)),
}


def plain(value: Any) -> Any:
    """An answer as JSON would carry it: devices, dtypes and sizes as their strings or tuples."""
    if isinstance(value, (torch.device, torch.dtype)):
        return str(value)
    if isinstance(value, torch.Size):
        return tuple(value)
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def answer(snippet: str) -> Any:
    """What `snippet` sets `out` to, or (exception type, message up to its first comma)."""
    scope: dict[str, Any] = {"torch": torch}
    try:
        exec(snippet, scope)  # noqa: S102  the table's own snippets
    except Exception as e:  # noqa: BLE001  a refusal is an answer
        return (type(e).__name__, str(e).split(",", 1)[0].strip())
    return plain(scope["out"])


@pytest.fixture(scope="module")
def h100():
    with standin.machine(parse_target("h100")) as drv:
        yield drv


@pytest.mark.parametrize("name", sorted(CASES))
def test_answers_as_a_gpu_does(h100, name):
    snippet, expected = CASES[name]
    assert answer(snippet) == expected


def test_marks_hold_in_threads_the_script_starts(h100):
    """A thread's tensors answer as the main thread's (the stand-in's mode is entered in every new thread)."""
    got = {}

    def work():
        got["answers"] = (
            torch.randn(2).device,
            torch.randn(2, device="cuda").device,
            answer("out = torch.randn(2, device='cuda') + torch.randn(2)"),
        )

    th = threading.Thread(target=work)
    th.start()
    th.join()
    assert got["answers"] == (torch.device("cpu"), torch.device("cuda", 0), MIX)


def test_dataloader_worker_batches_answer_cpu(h100):
    """Batches a worker process made come back through shared memory (rebuilt by torch.empty + set_):
    still CPU tensors; moved .to("cuda"), cuda ones."""
    ds = torch.utils.data.TensorDataset(torch.randn(8, 2))
    batches = list(torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2))
    assert [b[0].device.type for b in batches] == ["cpu", "cpu"]
    assert batches[0][0].to("cuda").device == torch.device("cuda", 0)


def test_stand_in_gone_every_tensor_says_its_own_device(h100):
    """The answers are the stand-in's alone: leaving it, a tensor made for cuda is the CPU tensor it is."""
    t = torch.randn(2, device="cuda")
    assert t.device == torch.device("cuda", 0)
    with torch._C.DisableTorchFunction():
        assert t.device == torch.device("cpu")


def test_compiled_model_outputs_answer_like_eager():
    """A torch.compile'd model on "cuda" (run with the stand-in's modes off, so Dynamo traces none of
    irscope) returns tensors that answer cuda:0 as eager's do, so torch.testing.assert_close on the two
    compares devices equal; a model compiled over CPU tensors answers cpu."""
    pytest.importorskip("torch._inductor")
    with standin.machine(parse_target("h100")):
        m = torch.nn.Linear(8, 8).cuda()
        x = torch.randn(4, 8, device="cuda")
        y = torch.compile(m)(x)
        assert (y.device, y.is_cuda) == (torch.device("cuda", 0), True)
        assert y.shape == m(x).shape and y.device == m(x).device
        z = torch.compile(lambda a: a * 2 + 1)(torch.randn(4))
        assert z.device == torch.device("cpu")
