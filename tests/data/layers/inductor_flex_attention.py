"""torch.compile of flex_attention on "cuda" (Helion's attention example compiles it as a baseline),
checked against scaled_dot_product_attention."""

import torch
from torch.nn.attention.flex_attention import flex_attention

torch.manual_seed(0)
q, k, v = (torch.randn(1, 2, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))
out = torch.compile(flex_attention, fullgraph=True)(q, k, v)
ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.testing.assert_close(out, ref, atol=2e-2, rtol=2e-2)
print("inductor_flex_attention: checks passed")
