"""tensor.ref()/variable.ref() and tf.compat.v1's tensor-equality switch."""
import numpy as np

import eagerflow as ef


def test_ref_is_a_hashable_identity_reference():
    x = ef.Variable(0.0)
    t = ef.constant([1.0, 2.0])
    refs = {x.ref(), t.ref(), x.ref()}
    assert len(refs) == 2
    assert x.ref() in refs and t.ref() in refs and ef.constant([1.0, 2.0]).ref() not in refs
    assert x.ref().deref() is x and t.ref().deref() is t
    assert x.ref() == x.ref() and x.ref() != ef.Variable(0.0).ref()
    assert repr(t.ref()).startswith("<Reference wrapping ")


def test_ref_as_dict_key_keeps_the_value():
    t = ef.constant(3.0)
    d = {t.ref(): "three"}
    assert d[t.ref()] == "three"
    np.testing.assert_allclose(next(iter(d)).deref().numpy(), 3.0)


def test_disable_tensor_equality_compares_identity_until_enabled():
    a, b = ef.constant(1.0), ef.constant(1.0)
    try:
        ef.compat.v1.disable_tensor_equality()
        assert (a == a) is True and (a == b) is False and (a != b) is True
    finally:
        ef.compat.v1.enable_tensor_equality()
    eq = a == b
    assert isinstance(eq, ef.Tensor) and bool(eq.numpy())
    assert not bool((a != b).numpy())
