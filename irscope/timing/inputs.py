"""Launch inputs on the GPU: made from a seed, copied, restored, and outputs compared by dtype.

Every variant of a timing gets identical inputs (materialize, once, from the seed); the tensors a
kernel writes are restored before each run (restore); a variant's outputs are compared with the
baseline's within a tolerance chosen by dtype (check_outputs).
"""

from __future__ import annotations

from typing import Any

from irscope.timing.launch import DTYPES, Launch, TensorSpec

TOLERANCE = {
    "fp16": (1e-2, 1e-2),
    "bf16": (2e-2, 2e-2),
    "fp32": (1e-3, 1e-3),
    "fp64": (1e-8, 1e-8),
    "fp8e4nv": (1.25e-1, 1.25e-1),
    "fp8e5": (2.5e-1, 2.5e-1),
}


def _torch_dtype(short: str):
    import torch

    return getattr(torch, DTYPES[short])


def make_tensor(t: TensorSpec, device, gen):
    import torch

    dtype = _torch_dtype(t.dtype)
    if t.strides is not None:
        extent = 1 + sum((d - 1) * s for d, s in zip(t.shape, t.strides)) + t.offset
        base = _fill(t.maker, (extent,), dtype, device, gen)
        return torch.as_strided(base, t.shape, t.strides, t.offset)
    total = t.numel() + t.offset
    base = _fill(t.maker, (total,), dtype, device, gen)
    view = base[t.offset :].view(t.shape)
    return view.t() if t.transpose else view


def _fill(maker: str, shape, dtype, device, gen):
    import torch

    if maker == "arange":
        return torch.arange(shape[0], device=device).to(dtype)
    if maker in ("zeros", "empty"):  # empty is zero-filled too: never time or compare garbage
        return torch.zeros(shape, dtype=dtype, device=device)
    if maker == "ones":
        return torch.ones(shape, dtype=dtype, device=device)
    if dtype.is_floating_point:
        work = torch.float32 if dtype.itemsize < 2 else dtype
        fn = torch.randn if maker == "randn" else torch.rand
        return fn(shape, dtype=work, device=device, generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, device=device, generator=gen).bool()
    return torch.randint(-64, 64, shape, dtype=dtype, device=device, generator=gen)


def materialize(launch: Launch, device, seed: int = 0) -> dict[str, Any]:
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return {name: make_tensor(v, device, gen) if isinstance(v, TensorSpec) else v for name, v in launch.args.items()}


def clone(args: dict[str, Any]) -> dict[str, Any]:
    import torch

    out = {}
    for k, v in args.items():
        if isinstance(v, torch.Tensor):
            base = v._base if v._base is not None else v
            copy = base.clone()
            out[k] = torch.as_strided(copy, v.shape, v.stride(), v.storage_offset())
        else:
            out[k] = v
    return out


def restore(work: dict[str, Any], pristine: dict[str, Any], only: set[str] | None = None) -> None:
    """Copy the pristine inputs back; `only` limits it to the tensors a kernel was seen to write."""
    import torch

    for k, v in work.items():
        if isinstance(v, torch.Tensor) and (only is None or k in only):
            v.copy_(pristine[k])


def written(after: dict[str, Any], pristine: dict[str, Any]) -> set[str]:
    """Tensors a run changed. Restoring only these keeps large read-only inputs out of every round."""
    import torch

    return {k for k, v in after.items() if isinstance(v, torch.Tensor) and not torch.equal(v, pristine[k])}


def check_outputs(baseline: dict[str, Any], other: dict[str, Any], launch: Launch) -> str:
    """'' when every tensor matches the baseline's within the dtype's tolerance, else why not."""
    import torch

    for name, spec in launch.args.items():
        if not isinstance(spec, TensorSpec):
            continue
        a, b = baseline[name], other[name]
        if spec.dtype in TOLERANCE:
            rtol, atol = TOLERANCE[spec.dtype]
            ok = torch.allclose(a.float(), b.float(), rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = torch.equal(a, b)
        if not ok:
            diff = (a.float() - b.float()).abs()
            return f"{name} differs from the baseline (max abs difference {diff.max().item():.3g})"
    return ""


def meta_tensor(t: TensorSpec):
    """The tensor a TensorSpec makes, on torch's meta device: shapes, strides, dtype, and no memory."""
    import torch

    dtype = _torch_dtype(t.dtype)
    if t.strides is not None:
        return torch.empty_strided(t.shape, t.strides, dtype=dtype, device="meta")
    view = torch.empty(t.shape, dtype=dtype, device="meta")
    return view.t() if t.transpose else view
