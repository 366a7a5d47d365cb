"""A Helion kernel whose epilogue, a lambda the caller passes, indexes a tensor of the caller's by the tiles
(Helion's matmul example: `lambda acc, tile: acc + bias[tile[0], tile[1]]`), checked against torch."""

import helion
import helion.language as hl
import torch


@helion.kernel(config=helion.Config(block_sizes=[16, 16]), static_shapes=True)
def add_epilogue(x: torch.Tensor, epilogue=lambda acc, tile: acc) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile_m, tile_n in hl.tile(x.size()):
        out[tile_m, tile_n] = epilogue(x[tile_m, tile_n], (tile_m, tile_n))
    return out


x = torch.randn(32, 32, device="cuda")
bias = torch.randn(32, 32, device="cuda")
torch.testing.assert_close(add_epilogue(x, lambda acc, tile: acc + bias[tile[0], tile[1]]), x + bias)
print("helion_epilogue_index: checks passed")
