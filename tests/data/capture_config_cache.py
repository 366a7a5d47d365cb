"""An Autotuner subclass whose cache is a library's own object, as FlagGems' LibTuner has: a
ConfigCache with __getitem__ and no keys() (dict() of it walks it as a sequence and fails)."""

import torch
import triton
import triton.language as tl
from triton.runtime.autotuner import Autotuner

DEVICE = triton.runtime.driver.active.get_active_torch_device()


class ConfigCache:
    """Like FlagGems' ConfigCache: looked up by key, never iterable as a mapping."""

    def __init__(self):
        self._store = {}

    def __getitem__(self, key):  # FlagGems' answers a row of its on-disk table; never a sequence item
        if not isinstance(key, tuple):
            raise TypeError("'int' object is not iterable")
        return self._store[key]

    def __setitem__(self, key, value):
        self._store[key] = value

    def __contains__(self, key):
        return key in self._store

    def get(self, key, default=None):
        return self._store.get(key, default)


class LibTuner(Autotuner):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cache = ConfigCache()

    def run(self, *args, **kwargs):
        return super().run(*args, **kwargs)


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)


add_one = LibTuner(add_one_kernel, add_one_kernel.arg_names, [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})],
                   key=["n"], reset_to_zero=None, restore_value=None)

if __name__ == "__main__":
    x = torch.randn(300, device=DEVICE)
    out = torch.empty_like(x)
    add_one[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](x, out, 300)
    torch.testing.assert_close(out, x + 1.0)
    print("config cache ok")
