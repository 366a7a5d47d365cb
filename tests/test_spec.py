"""Signature parsing and specialization, checked against Triton's own launch binder."""

from __future__ import annotations

import pytest

from irscope.compile import compiler
from irscope.errors import BadInput
from irscope.kernel import loader
from irscope.kernel.settings import Settings, parse_assignments
from irscope.kernel.spec import build_spec, parse_element, split_signature
from irscope.kernel.targets import parse_target
from tests.helpers import DATA, MATMUL, VECTOR_ADD

H100 = parse_target("h100")


def bound(path, signature, kernel=None, target=H100, named=(), consts=()):
    ref = loader.select_kernels(path, [kernel] if kernel else None)[0]
    spec = build_spec(ref, signature, list(named), list(consts))
    options, sig, constexprs, attrs = compiler.bind(spec, Settings(target))
    return spec, options, sig, constexprs, attrs


def divisible(attrs, index):
    return ["tt.divisibility", 16] in attrs.get((index,), [])


def test_pointer_alignment_defaults_to_what_torch_allocations_get():
    _, _, sig, _, attrs = bound(VECTOR_ADD, "*fp32, *fp32:16, *fp32:4, i32, 1024")
    assert sig["x_ptr"] == "*fp32"
    assert divisible(attrs, 0), "an unsaid alignment is a 16-byte aligned torch allocation"
    assert divisible(attrs, 1)
    assert not divisible(attrs, 2), "*fp32:4 is a 4-byte aligned pointer: no divisibility hint"


def test_int_hints_follow_launch_rules():
    _, _, sig, constexprs, attrs = bound(VECTOR_ADD, "*fp32, *fp32, *fp32, i32:16, 1024")
    assert sig["n_elements"] == "i32" and divisible(attrs, 3)
    _, _, sig, constexprs, attrs = bound(VECTOR_ADD, "*fp32, *fp32, *fp32, i32, 1024")
    assert not divisible(attrs, 3)
    _, _, sig, constexprs, attrs = bound(VECTOR_ADD, "*fp32, *fp32, *fp32, i32:1, 1024")
    assert sig["n_elements"] == "constexpr" and constexprs[(3,)] == 1, "an int equal to 1 becomes a constant"
    _, _, sig, _, attrs = bound(VECTOR_ADD, "*fp32, *fp32, *fp32, i64:16, 1024")
    assert sig["n_elements"] == "i64" and divisible(attrs, 3)


def test_do_not_specialize_drops_the_hint_like_a_launch():
    spec, _, sig, _, attrs = bound(DATA / "no_specialize.py", "*fp32, *fp32, i32:16, 256")
    assert sig["n"] == "i32" and not divisible(attrs, 2)
    assert any("do_not_specialize" in n for n in spec.notes)


def test_named_form_equals_positional():
    a = bound(VECTOR_ADD, "*fp16, *fp16, *fp16, i32:16, 512")
    b = bound(
        VECTOR_ADD,
        None,
        named=["x_ptr=*fp16", "y_ptr=*fp16:16", "out_ptr=*fp16", "n_elements=i32:16"],
        consts=["BLOCK_SIZE=512"],
    )
    assert a[2:] == b[2:]


def test_matmul_signature_from_the_issue():
    _, options, sig, constexprs, attrs = bound(
        MATMUL, "*fp16:16, *fp16:16, *fp16:16, i32, i32, i32, i32, i32:1, i32, i32:1, i32, i32:1, 128, 128, 64, 8"
    )
    assert constexprs[(7,)] == 1 and constexprs[(12,)] == 128 and constexprs[(15,)] == 8
    assert options.num_warps == 4


@pytest.mark.parametrize(
    "text, message",
    [
        ("*fp17", "unknown pointer element type 'fp17'"),
        ("*fp32:3", "power of two"),
        ("i32:8", "must be :16"),
        ("fp32:16", "takes no ':' hint"),
        ("banana", "cannot read 'banana'"),
        ("", "empty element"),
    ],
)
def test_bad_elements_say_which_and_why(text, message):
    with pytest.raises(BadInput, match=message) as e:
        parse_element(text, "element 2 (y_ptr)")
    assert "element 2 (y_ptr)" in str(e.value)


def test_wrong_count_names_the_parameters():
    with pytest.raises(BadInput, match=r"has 3 elements but add_kernel takes 5 \(x_ptr, y_ptr"):
        bound(VECTOR_ADD, "*fp32, *fp32, *fp32")


def test_type_given_for_constexpr_is_refused():
    with pytest.raises(BadInput, match="BLOCK_SIZE is tl.constexpr"):
        bound(VECTOR_ADD, "*fp32, *fp32, *fp32, i32, i32")


def test_split_keeps_brackets_and_quotes_together():
    assert split_signature("*fp32, gl.BlockedLayout([4], [32], [4], [0]), 'a,b'") == [
        "*fp32",
        " gl.BlockedLayout([4], [32], [4], [0])",
        " 'a,b'",
    ]


def test_options_are_typed_and_checked():
    opts = parse_assignments(["num_warps=8", "enable_fp_fusion=false", "maxnreg=none"], H100)
    assert opts == {"num_warps": 8, "enable_fp_fusion": False, "maxnreg": None}
    with pytest.raises(BadInput, match="num_warps=eight: expected an integer"):
        parse_assignments(["num_warps=eight"], H100)
    with pytest.raises(BadInput, match=r"num_wraps.*did you mean 'num_warps'.*valid: .*num_stages"):
        parse_assignments(["num_wraps=8"], H100)
    with pytest.raises(BadInput, match="waves_per_eu"):
        parse_assignments(["waves_per_eu=2"], H100)  # an AMD option on an NVIDIA target
    assert parse_assignments(["waves_per_eu=2"], parse_target("mi300x")) == {"waves_per_eu": 2}


def test_backend_rejects_illegal_values_in_its_own_words():
    ref = loader.select_kernels(VECTOR_ADD, None)[0]
    spec = build_spec(ref, "*fp32, *fp32, *fp32, i32, 1024", [], [])
    with pytest.raises(BadInput, match="num_warps"):
        compiler.bind(spec, Settings(H100, options={"num_warps": 3}))


def test_targets_and_aliases():
    assert parse_target("h200").name == "cuda:90"
    assert parse_target("mi355x").name == "hip:gfx950"
    assert parse_target("sm_80").name == "cuda:80"
    assert parse_target("gfx942").warp_size == 64
    assert isinstance(parse_target("b200").arch, int)
    with pytest.raises(BadInput, match="unknown target 'h10'.*did you mean"):
        parse_target("h10")


def test_a_bool_pointer_spelled_as_inductor_spells_it_is_the_launchers_u1():
    """Inductor writes a torch.bool tensor's pointer as '*i1' (Triton's str_to_ty takes it), Triton's own
    launcher binds it as '*u1': one element type, so a captured dropout kernel's spec dumps."""
    assert parse_element("*i1:16", "element 1 (out_ptr1)") == parse_element("*u1:16", "element 1 (out_ptr1)")
    assert parse_element("*i1", "element 1 (out_ptr1)").type == "*u1"
